package e2e

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/test/harness"
)

// flowControl is the name of the install's PriorityLevelConfiguration and
// FlowSchema (deploy/base/flowcontrol.yaml).
const flowControl = "tether"

// waitFlowControl waits until the API server has taken in the install's
// FlowSchema (its controller has written the schema's Dangling condition, False:
// its priority level exists), so that requests from then on are classified by
// it, and returns the UID of the install's priority level.
func waitFlowControl(t *testing.T, c client.Client) string {
	t.Helper()
	schema := flowControlObject("FlowSchema")
	harness.Eventually(t, waitTimeout, "the API server to take in FlowSchema "+flowControl, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Name: flowControl}, schema); err != nil {
			return false, err
		}
		conditions, _, _ := unstructured.NestedSlice(schema.Object, "status", "conditions")
		for _, raw := range conditions {
			if cond, ok := raw.(map[string]any); ok && cond["type"] == "Dangling" {
				return cond["status"] == string(metav1.ConditionFalse), nil
			}
		}
		return false, nil
	})
	level := flowControlObject("PriorityLevelConfiguration")
	harness.Must(t, c.Get(t.Context(), client.ObjectKey{Name: flowControl}, level))
	return string(level.GetUID())
}

func flowControlObject(kind string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("flowcontrol.apiserver.k8s.io/v1")
	obj.SetKind(kind)
	return obj
}

// checkPriorityLevel fails the test unless the proxy saw requests that match
// (what names them) and the API server classified every one of them under the
// priority level whose UID is level.
func checkPriorityLevel(t *testing.T, aud *auditor, level, what string, match func(apiRequest) bool) {
	t.Helper()
	seen := 0
	for _, r := range aud.requests() {
		if !match(r) {
			continue
		}
		seen++
		if r.priorityLevel != level {
			t.Errorf("%s %s %s/%s (as %q) was classified under priority level %q; want %s's (%s)", r.verb, r.resource, r.namespace, r.name, r.as, r.priorityLevel, flowControl, level)
		}
	}
	if seen == 0 {
		t.Errorf("no request of %s went through the proxy", what)
	}
}
