package sync

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/health"
)

func keptObject(t *testing.T, obj map[string]any) *apply.Object {
	t.Helper()
	kept, err := apply.NewObject(&unstructured.Unstructured{Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	return kept
}

// TestAVerdictFromTheObjectAloneIsNotedOnTheKeptObject judges a ConfigMap twice
// and two Deployments that have not rolled out: the ConfigMap's Healthy verdict is
// noted on its Object and read back (a note no reader writes comes back as it
// is), a custom check for the kind judges anew, the verdict on a Deployment its
// controller has not observed yet (from the object alone) is noted, and one on a
// Deployment observed and not Healthy, which its pods may tell more of, is not.
func TestAVerdictFromTheObjectAloneIsNotedOnTheKeptObject(t *testing.T) {
	r := &Reconciler{}
	configMaps := schema.GroupKind{Kind: "ConfigMap"}
	cm := keptObject(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "web", "namespace": "apps", "uid": "u1"}, "data": map[string]any{"a": "b"}})

	if got := r.healthOf(t.Context(), Identity{}, nil, configMaps, cm); got.Code != v1alpha1.HealthHealthy {
		t.Fatalf("a ConfigMap judged %v; want Healthy", got)
	}
	if noted, ok := cm.Note().(*health.Result); !ok || noted.Code != v1alpha1.HealthHealthy {
		t.Fatalf("the note after a Healthy verdict is %v; want the verdict", cm.Note())
	}
	cm.SetNote(&health.Result{Code: v1alpha1.HealthHealthy, Message: "noted"})
	if got := r.healthOf(t.Context(), Identity{}, nil, configMaps, cm); got.Message != "noted" {
		t.Errorf("the second judgement is %v; want the note read back", got)
	}

	checker, err := health.NewChecker([]v1alpha1.HealthCheck{{APIVersion: "v1", Kind: "ConfigMap", Current: "false", Failed: "true"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.healthOf(t.Context(), Identity{}, checker, configMaps, cm); got.Code != v1alpha1.HealthDegraded {
		t.Errorf("with a check for ConfigMaps that fails them: %v; want Degraded, the note not read", got)
	}

	deployments := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	deployment := func(uid string, observed int64) *apply.Object {
		return keptObject(t, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "apps", "uid": uid, "generation": int64(2)},
			"spec":     map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}},
			"status":   map[string]any{"observedGeneration": observed}})
	}
	unobserved := deployment("u2", 1)
	got := r.healthOf(t.Context(), Identity{}, nil, deployments, unobserved)
	if got.Code == v1alpha1.HealthHealthy {
		t.Fatalf("a Deployment not yet observed at its generation judged %v; want not Healthy", got)
	}
	if noted, ok := unobserved.Note().(*health.Result); !ok || *noted != got {
		t.Errorf("the note after judging a Deployment not yet observed is %v; want the verdict %v", unobserved.Note(), got)
	}
	observed := deployment("u3", 2)
	if got := r.healthOf(t.Context(), Identity{}, nil, deployments, observed); got.Code == v1alpha1.HealthHealthy {
		t.Fatalf("a Deployment observed with no replicas ready judged %v; want not Healthy", got)
	}
	if observed.Note() != nil {
		t.Errorf("a verdict that the pods may change was noted: %v", observed.Note())
	}
}
