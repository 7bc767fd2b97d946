package health

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
)

// readDeployment follows a Deployment's rollout: Suspended while paused, Degraded
// once it exceeded its progress deadline or a pod of it cannot start, Progressing
// until every replica is updated and available.
func readDeployment(obj *unstructured.Unstructured, pods []*unstructured.Unstructured) (Result, error) {
	d := &appsv1.Deployment{}
	if err := typed(obj, d); err != nil {
		return Result{}, err
	}
	if d.Spec.Paused {
		return Result{Code: v1alpha1.HealthSuspended, Message: "rollout is paused"}, nil
	}
	if d.Status.ObservedGeneration < d.Generation {
		return Result{Code: v1alpha1.HealthProgressing, Message: "waiting for the deployment controller to observe the new spec"}, nil
	}
	want := replicas(d.Spec.Replicas)
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return withPods(Result{Code: v1alpha1.HealthDegraded, Message: c.Reason + ": " + c.Message}, pods), nil
		}
	}
	var res Result
	switch s := d.Status; {
	case s.UpdatedReplicas < want:
		res = result(v1alpha1.HealthProgressing, "%d of %d replicas updated", s.UpdatedReplicas, want)
	case s.Replicas > s.UpdatedReplicas:
		res = result(v1alpha1.HealthProgressing, "%s pending termination", count(s.Replicas-s.UpdatedReplicas, "old replica"))
	case s.AvailableReplicas < s.UpdatedReplicas:
		res = result(v1alpha1.HealthProgressing, "%d of %d updated replicas available", s.AvailableReplicas, s.UpdatedReplicas)
	default:
		return healthy, nil
	}
	return withPods(res, pods), nil
}

// readStatefulSet follows a StatefulSet's rollout. A partitioned rolling update is
// done (Healthy) once the replicas above the partition run the new revision.
func readStatefulSet(obj *unstructured.Unstructured, pods []*unstructured.Unstructured) (Result, error) {
	s := &appsv1.StatefulSet{}
	if err := typed(obj, s); err != nil {
		return Result{}, err
	}
	if s.Status.ObservedGeneration < s.Generation {
		return Result{Code: v1alpha1.HealthProgressing, Message: "waiting for the statefulset controller to observe the new spec"}, nil
	}
	want := replicas(s.Spec.Replicas)
	var partition int32
	rolling := s.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType
	if ru := s.Spec.UpdateStrategy.RollingUpdate; rolling && ru != nil && ru.Partition != nil {
		partition = min(*ru.Partition, want)
	}
	var res Result
	switch st := s.Status; {
	case st.ReadyReplicas < want:
		res = result(v1alpha1.HealthProgressing, "%d of %d replicas ready", st.ReadyReplicas, want)
	case rolling && partition > 0 && st.UpdatedReplicas < want-partition:
		res = result(v1alpha1.HealthProgressing, "partitioned rollout: %d of %d replicas above partition %d updated", st.UpdatedReplicas, want-partition, partition)
	case rolling && partition > 0:
		return result(v1alpha1.HealthHealthy, "partitioned rollout done: %d of %d replicas updated (partition %d)", st.UpdatedReplicas, want, partition), nil
	case rolling && st.UpdateRevision != "" && st.CurrentRevision != st.UpdateRevision:
		res = result(v1alpha1.HealthProgressing, "%d of %d replicas updated", st.UpdatedReplicas, want)
	default:
		return healthy, nil
	}
	return withPods(res, pods), nil
}

// readDaemonSet follows a DaemonSet's rollout over its nodes.
func readDaemonSet(obj *unstructured.Unstructured, pods []*unstructured.Unstructured) (Result, error) {
	d := &appsv1.DaemonSet{}
	if err := typed(obj, d); err != nil {
		return Result{}, err
	}
	if d.Status.ObservedGeneration < d.Generation {
		return Result{Code: v1alpha1.HealthProgressing, Message: "waiting for the daemonset controller to observe the new spec"}, nil
	}
	var res Result
	switch s := d.Status; {
	case d.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType && s.UpdatedNumberScheduled < s.DesiredNumberScheduled:
		res = result(v1alpha1.HealthProgressing, "%d of %d nodes updated", s.UpdatedNumberScheduled, s.DesiredNumberScheduled)
	case s.NumberAvailable < s.DesiredNumberScheduled:
		res = result(v1alpha1.HealthProgressing, "%d of %d nodes available", s.NumberAvailable, s.DesiredNumberScheduled)
	default:
		return healthy, nil
	}
	return withPods(res, pods), nil
}

// readReplicaSet: a ReplicaSet (or ReplicationController) applied bare, not by a
// Deployment, is Healthy once its controller observed its spec and every desired
// replica is available; Degraded when its controller reports a ReplicaFailure
// (a quota or admission that refuses its pods). kstatus would call one without
// conditions Healthy at once, before a single pod runs.
func readReplicaSet(obj *unstructured.Unstructured) (Result, error) {
	conditions, _, err := unstructured.NestedSlice(obj.Object, "status", "conditions")
	if err != nil {
		return Result{}, err
	}
	for _, raw := range conditions {
		c, _ := raw.(map[string]any)
		if c["type"] == "ReplicaFailure" && c["status"] == "True" {
			reason, _ := c["reason"].(string)
			message, _ := c["message"].(string)
			return Result{Code: v1alpha1.HealthDegraded, Message: why(reason, message)}, nil
		}
	}
	observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	if observed < obj.GetGeneration() {
		return Result{Code: v1alpha1.HealthProgressing, Message: "waiting for the controller to observe the new spec"}, nil
	}
	want, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if !found {
		want = 1
	}
	if available, _, _ := unstructured.NestedInt64(obj.Object, "status", "availableReplicas"); available < want {
		return result(v1alpha1.HealthProgressing, "%d of %d replicas available", available, want), nil
	}
	return healthy, nil
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// withPods sharpens the verdict on a workload that is not done with what its pods
// say: a pod with a container that cannot start (CrashLoopBackOff,
// ImagePullBackOff, ...) makes it Degraded, naming pod and container; otherwise the
// first pod that is not healthy says why. A pod that merely failed does not make a
// workload Degraded: its controller replaces it, or gives up and says so.
func withPods(res Result, pods []*unstructured.Unstructured) Result {
	var why string
	for _, obj := range pods {
		pod := &corev1.Pod{}
		if obj.GetDeletionTimestamp() != nil || typed(obj, pod) != nil {
			continue
		}
		if bad, ok := failingContainer(pod); ok {
			return result(v1alpha1.HealthDegraded, "%s; pod %s: %s", res.Message, pod.Name, bad)
		}
		if ph := podHealth(pod); why == "" && ph.Code != v1alpha1.HealthHealthy {
			why = fmt.Sprintf("pod %s: %s", pod.Name, ph.Message)
		}
	}
	if why != "" {
		res.Message += "; " + why
	}
	return res
}

// count says n of a noun, in the singular for one: "1 old replica", "2 old replicas".
func count(n int32, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
