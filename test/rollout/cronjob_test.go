package rollout

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/health"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// TestACronJobWhoseLastJobFailedIsDegraded runs two CronJobs through the real
// cronjob and job controllers, one whose Job fails and one whose Job succeeds, and
// waits for the Sync, Healthy before their runs, to tell the failure without a new
// commit or an interval: a status change of a Healthy CronJob re-assesses the Sync.
func TestACronJobWhoseLastJobFailedIsDegraded(t *testing.T) {
	a := startAgent(t, agentOptions{})
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	cronJob := func(name string, podAnnotations string) string {
		// Once a year, so that each runs once in the test, when told it missed its
		// last schedule (below).
		return fmt.Sprintf(`apiVersion: batch/v1
kind: CronJob
metadata: {name: %s}
spec:
  schedule: "0 0 1 1 *"
  timeZone: Etc/UTC
  jobTemplate:
    spec:
      backoffLimit: 0
      template:
        metadata: {annotations: {%s}}
        spec:
          restartPolicy: Never
          terminationGracePeriodSeconds: 0
          containers: [{name: report, image: "registry.k8s.io/pause:3.10"}]
`, name, podAnnotations)
	}
	repo, commit := startRepo(t, map[string]string{"jobs.yaml": cronJob("report", fmt.Sprintf("%q: \"true\"", controlplane.FailAnnotation)) + "---\n" + cronJob("cleanup", "")})
	s := a.newSync(t, ns, repo)
	a.waitHealth(t, s, commit, v1alpha1.HealthHealthy)

	// The cronjob controller starts a Job for the latest schedule it missed since
	// status.lastScheduleTime (the creation time when there is none): moved back
	// before this year's first of January, it runs that one at once instead of next
	// year. Everything after (the Jobs, their pods, the CronJobs' status) is the
	// controllers' and kwok's.
	year := time.Now().UTC().Year()
	missed := fmt.Sprintf(`{"lastScheduleTime": "%d-12-31T00:00:00Z"}`, year-1)
	setStatus(t, a.Client, cronJobKind, ns, "report", missed)
	setStatus(t, a.Client, cronJobKind, ns, "cleanup", missed)
	// Until the controller runs it, the status moved back reads as a run that did
	// not succeed: wait for the controller's own lastScheduleTime, its Job finished.
	ran := fmt.Sprintf("%d-01-01T00:00:00Z", year)
	finished := func(obj *unstructured.Unstructured) bool {
		last, _, _ := unstructured.NestedString(obj.Object, "status", "lastScheduleTime")
		active, _, _ := unstructured.NestedSlice(obj.Object, "status", "active")
		return last == ran && len(active) == 0
	}
	how := "Its status.lastScheduleTime was moved back through the status subresource by the test, so that the cronjob controller ran its missed schedule at once; the status is the controller's since."
	report := waitLive(t, a.Client, ns, "report", "the report's Job failed", func(obj *unstructured.Unstructured) bool {
		return finished(obj) && health.Compute(obj).Code == v1alpha1.HealthDegraded
	})
	captureObject(t, report, "cronjob/degraded-last-job-failed", how)
	cleanup := waitLive(t, a.Client, ns, "cleanup", "the cleanup's Job succeeded", func(obj *unstructured.Unstructured) bool {
		return finished(obj) && health.Compute(obj).Code == v1alpha1.HealthHealthy
	})
	captureObject(t, cleanup, "cronjob/healthy-last-job-succeeded", how)

	want := "the job scheduled at " + ran + " did not succeed"
	got := a.WaitFor(t, s, "the Sync Degraded by the failed run", func(s *v1alpha1.Sync) bool {
		r, _ := resource(s.Status, "CronJob", "report")
		return s.Status.Health == v1alpha1.HealthDegraded && strings.Contains(r.Message, want)
	})
	if h := healthOf(got.Status, "CronJob", "cleanup"); h != v1alpha1.HealthHealthy {
		t.Errorf("CronJob/cleanup is %s, want Healthy", h)
	}
}

// waitLive polls the live CronJob ns/name until cond holds, and returns it.
func waitLive(t *testing.T, c client.Client, ns, name, what string, cond func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(cronJobKind)
	harness.Eventually(t, waitTimeout, what, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			return false, err
		}
		if !cond(obj) {
			return false, fmt.Errorf("status: %v", obj.Object["status"])
		}
		return true, nil
	})
	return obj
}
