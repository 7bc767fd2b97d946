package main

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"tether.dev/tether/api/v1alpha1"
)

func TestTreeDepsShowsTheDependencyGraph(t *testing.T) {
	ready := func(ns, name string, ok bool, deps ...v1alpha1.DependencyReference) *v1alpha1.Sync {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		return &v1alpha1.Sync{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       v1alpha1.SyncSpec{DependsOn: deps},
			Status: v1alpha1.SyncStatus{
				LastAppliedRevision: "main@sha1:4f2c1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b",
				SourceRevision:      "main@sha1:4f2c1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b",
				Conditions:          []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: status}},
			},
		}
	}
	syncs := map[types.NamespacedName]*v1alpha1.Sync{}
	add := func(s *v1alpha1.Sync) *v1alpha1.Sync {
		syncs[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}] = s
		return s
	}
	add(ready("platform", "crds", true))
	add(ready("platform", "operator", false, v1alpha1.DependencyReference{Name: "crds"}, v1alpha1.DependencyReference{Name: "webhooks"}, v1alpha1.DependencyReference{Namespace: "apps", Name: "widgets"}))
	widgets := add(ready("apps", "widgets", false, v1alpha1.DependencyReference{Namespace: "platform", Name: "operator"}))

	var out bytes.Buffer
	p := &treePrinter{w: &out}
	p.printDeps(widgets, func(n types.NamespacedName) (*v1alpha1.Sync, error) { return syncs[n], nil })
	want := `Sync/apps/widgets  main@4f2c1a2  NotReady (not Ready)
└── Sync/platform/operator  main@4f2c1a2  NotReady (not Ready)
    ├── Sync/platform/crds  main@4f2c1a2  Ready
    ├── Sync/platform/webhooks  (does not exist)
    └── Sync/apps/widgets  (cycle: spec.dependsOn leads back here)
`
	if p.err != nil {
		t.Fatal(p.err)
	}
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("tree --deps (-want +got):\n%s", diff)
	}
}
