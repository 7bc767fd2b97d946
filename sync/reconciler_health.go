package sync

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/health"
	"tether.dev/tether/plan"
)

// healthOf judges one object as the cluster holds it (nil: missing), with the pods
// of a workload that is not Healthy. The change set keeps live objects as JSON:
// each is decoded here, judged, and dropped, one at a time. A verdict of the
// built-in readers that did not need the pods (any but that of a workload not
// Healthy whose controller has observed its spec) depends on the object alone,
// so it is noted on the kept Object and read back, without decoding, while the
// object stays at that version (a converged Sync judges every object at each
// reconcile).
func (r *Reconciler) healthOf(ctx context.Context, id Identity, checker *health.Checker, gk schema.GroupKind, kept *apply.Object) health.Result {
	builtIn := !checker.Checks(gk)
	var live *unstructured.Unstructured
	if kept != nil {
		if noted, ok := kept.Note().(*health.Result); ok && builtIn {
			return *noted
		}
		var err error
		if live, err = kept.Decode(); err != nil {
			return health.Result{Code: v1alpha1.HealthUnknown, Message: err.Error()}
		}
	}
	res := checker.Compute(live)
	if res.Code != v1alpha1.HealthHealthy && health.WantsPods(live) {
		return checker.Compute(live, r.podsOf(ctx, id, live)...)
	}
	if kept != nil && builtIn {
		kept.SetNote(noteOf(res))
	}
	return res
}

// healthy is the Healthy verdict most objects get, noted on all of them at once.
var healthy = &health.Result{Code: v1alpha1.HealthHealthy}

// noteOf is res to note on an Object: healthy itself when it is that.
func noteOf(res health.Result) *health.Result {
	if res == *healthy {
		return healthy
	}
	return &res
}

// maxPods bounds the pods read to explain one workload's health: the first pod
// that cannot start is reason enough.
const maxPods = 100

// podsOf returns, as id, the pods that workload selects (spec.selector), for
// health to name the one that holds a rollout up: from the PodWatch when id can
// watch pods, else listed with id.Pods. A failure to list (an account that may not
// list pods) is logged and costs only the precision of the message.
func (r *Reconciler) podsOf(ctx context.Context, id Identity, workload *unstructured.Unstructured) []*unstructured.Unstructured {
	if id.Pods == nil {
		return nil
	}
	raw, ok, err := unstructured.NestedMap(workload.Object, "spec", "selector")
	if err != nil || !ok {
		return nil
	}
	sel := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, sel); err != nil {
		return nil
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || selector.Empty() {
		return nil
	}
	if c, ok := id.Pods.(client.WithWatch); ok && r.Cluster.PodWatch != nil {
		pods, err := r.Cluster.PodWatch.Pods(ctx, id.podUser(), c, workload.GetNamespace(), selector, maxPods)
		if err == nil {
			return pods
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("v1")
	list.SetKind("PodList")
	if err := id.Pods.List(ctx, list, client.InNamespace(workload.GetNamespace()),
		client.MatchingLabelsSelector{Selector: selector}, client.Limit(maxPods)); err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("cannot list the pods of a workload; its health says less", "object", workload.GetKind()+"/"+workload.GetName(), "error", err.Error())
		return nil
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out
}

// recordHealth records one Event when a Sync's health changed from before to what
// status now says, once that status is written (a reconcile whose write failed is
// retried, and must not tell twice): Normal when it turns Healthy, Progressing or
// Suspended, Warning when it turns Degraded, Missing or Unknown. A Sync whose health
// was never known and still is not records nothing.
func (r *Reconciler) recordHealth(obj *v1alpha1.Sync, before v1alpha1.HealthStatusCode, status v1alpha1.SyncStatus) {
	now := status.Health
	if now == before || before == "" && now == v1alpha1.HealthUnknown {
		return
	}
	eventType := corev1.EventTypeNormal
	switch now {
	case v1alpha1.HealthDegraded, v1alpha1.HealthMissing, v1alpha1.HealthUnknown:
		eventType = corev1.EventTypeWarning
	}
	msg := fmt.Sprintf("Health is %s at revision %s", now, status.LastAppliedRevision)
	if before != "" {
		msg = fmt.Sprintf("Health went from %s to %s at revision %s", before, now, status.LastAppliedRevision)
	}
	if c := apimeta.FindStatusCondition(status.Conditions, v1alpha1.HealthyCondition); c != nil && c.Message != "" {
		msg += ": " + c.Message
	}
	r.Observers.Recorder.AnnotatedEventf(obj, map[string]string{"revision": status.LastAppliedRevision}, eventType, plan.HealthReason(now), "%s", msg)
}

// healthChecker compiles the Sync's spec.healthChecks. An expression that does not
// compile is bad input: the Sync is Stalled, naming it, until the Sync changes.
func healthChecker(obj *v1alpha1.Sync) (*health.Checker, error) {
	checker, err := health.NewChecker(obj.Spec.HealthChecks)
	if err != nil {
		return nil, &RefusedError{Reason: v1alpha1.ReasonHealthCheckInvalid, Msg: "invalid health check: " + err.Error()}
	}
	return checker, nil
}
