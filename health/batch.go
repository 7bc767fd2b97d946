package health

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
)

// readJob: a Job is Healthy once complete, Degraded once failed, Suspended while
// suspended, and Progressing while its pods run.
func readJob(obj *unstructured.Unstructured, pods []*unstructured.Unstructured) (Result, error) {
	j := &batchv1.Job{}
	if err := typed(obj, j); err != nil {
		return Result{}, err
	}
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return healthy, nil
		case batchv1.JobFailed:
			return withPods(Result{Code: v1alpha1.HealthDegraded, Message: why(c.Reason, c.Message)}, pods), nil
		}
	}
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		return Result{Code: v1alpha1.HealthSuspended, Message: "job is suspended"}, nil
	}
	return withPods(result(v1alpha1.HealthProgressing, "%d active, %d succeeded, %d failed", j.Status.Active, j.Status.Succeeded, j.Status.Failed), pods), nil
}

// readCronJob: a CronJob is Suspended while suspended; Degraded when its last run
// did not succeed (it scheduled a Job since its last success and none is running:
// the cronjob controller moves a Job out of status.active when it finishes, and
// records its completion as lastSuccessfulTime in the same write when it
// succeeded); Healthy otherwise, waiting for its schedule or running. The Jobs it
// starts are not Tether's objects: a running Job does not make it Progressing, or a
// Sync with an hourly CronJob would be Progressing every hour.
func readCronJob(obj *unstructured.Unstructured) (Result, error) {
	c := &batchv1.CronJob{}
	if err := typed(obj, c); err != nil {
		return Result{}, err
	}
	if c.Spec.Suspend != nil && *c.Spec.Suspend {
		return Result{Code: v1alpha1.HealthSuspended, Message: "cronjob is suspended"}, nil
	}
	st := c.Status
	if st.LastScheduleTime == nil || len(st.Active) > 0 {
		return healthy, nil
	}
	if st.LastSuccessfulTime == nil {
		return result(v1alpha1.HealthDegraded, "the job scheduled at %s did not succeed, and no job of it has yet",
			st.LastScheduleTime.UTC().Format(time.RFC3339)), nil
	}
	if st.LastSuccessfulTime.Before(st.LastScheduleTime) {
		return result(v1alpha1.HealthDegraded, "the job scheduled at %s did not succeed (last success at %s)",
			st.LastScheduleTime.UTC().Format(time.RFC3339), st.LastSuccessfulTime.UTC().Format(time.RFC3339)), nil
	}
	return healthy, nil
}
