package health

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
)

// condition is the part of a status condition health reads.
type condition struct {
	status, reason, message string
	observedGeneration      int64
}

// conditionsOf reads status.conditions by type, whatever the Go type behind them.
func conditionsOf(obj *unstructured.Unstructured) (map[string]condition, error) {
	list, _, err := unstructured.NestedSlice(obj.Object, "status", "conditions")
	if err != nil {
		return nil, err
	}
	out := map[string]condition{}
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		gen, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		out[str("type")] = condition{status: str("status"), reason: str("reason"), message: str("message"), observedGeneration: gen}
	}
	return out, nil
}

// readConditions judges any other object by the condition conventions that
// controllers of custom resources follow (kstatus; Flux, Crossplane, cert-manager):
//
//   - Stalled=True is Degraded;
//   - Ready=True is Healthy, once the controller observed the object's generation;
//   - Ready=False is Progressing while Reconciling=True, Degraded otherwise (the
//     controller gave its verdict: it does not work);
//   - Ready=Unknown is Progressing;
//   - without a Ready condition, kstatus decides: an object with no conditions is
//     Healthy once it exists.
func readConditions(obj *unstructured.Unstructured) (Result, error) {
	conds, err := conditionsOf(obj)
	if err != nil {
		return fromKstatus(obj)
	}
	if c, ok := conds["Stalled"]; ok && c.status == "True" {
		return Result{Code: v1alpha1.HealthDegraded, Message: why(c.reason, c.message)}, nil
	}
	ready, ok := conds["Ready"]
	if !ok {
		return fromKstatus(obj)
	}
	if stale(obj, ready) {
		return Result{Code: v1alpha1.HealthProgressing, Message: "waiting for the controller to observe the new spec"}, nil
	}
	switch ready.status {
	case "True":
		return healthy, nil
	case "False":
		if c, ok := conds["Reconciling"]; ok && c.status == "True" {
			return Result{Code: v1alpha1.HealthProgressing, Message: why(c.reason, c.message)}, nil
		}
		return Result{Code: v1alpha1.HealthDegraded, Message: why(ready.reason, ready.message)}, nil
	}
	return Result{Code: v1alpha1.HealthProgressing, Message: why(ready.reason, ready.message)}, nil
}

// stale reports whether the controller has not yet seen the object's newest
// generation, by status.observedGeneration or the condition's own.
func stale(obj *unstructured.Unstructured, c condition) bool {
	gen := obj.GetGeneration()
	if og, ok, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration"); ok && og < gen {
		return true
	}
	return c.observedGeneration != 0 && c.observedGeneration < gen
}

// why joins a condition's reason and message into one explanation.
func why(reason, message string) string {
	switch {
	case reason == "":
		return message
	case message == "":
		return reason
	}
	return reason + ": " + message
}
