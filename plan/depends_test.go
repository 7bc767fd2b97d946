package plan_test

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

// syncOf is a Sync ns/name depending on deps ("name" or "ns/name"), Ready at
// its current revision when ready.
func syncOf(ns, name string, ready bool, deps ...string) *v1alpha1.Sync {
	s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 2}}
	for _, d := range deps {
		dns, dname, ok := strings.Cut(d, "/")
		if !ok {
			dns, dname = "", d
		}
		s.Spec.DependsOn = append(s.Spec.DependsOn, v1alpha1.DependencyReference{Namespace: dns, Name: dname})
	}
	s.Status.ObservedGeneration = 2
	s.Status.SourceRevision, s.Status.LastAppliedRevision = "main@sha1:1", "main@sha1:1"
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	s.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: status, ObservedGeneration: 2}}
	return s
}

func TestCheckDependencies(t *testing.T) {
	t.Parallel()
	applying := syncOf("platform", "operator", true)
	applying.Status.SourceRevision = "main@sha1:2"
	oldGen := syncOf("platform", "crds", true)
	oldGen.Generation = 3
	tests := []struct {
		name       string
		sync       *v1alpha1.Sync
		others     []*v1alpha1.Sync
		wantReason string // "" when the Sync may proceed
		wantIn     []string
	}{
		{name: "no dependencies", sync: syncOf("apps", "web", false)},
		{name: "every dependency Ready", sync: syncOf("apps", "web", false, "platform/crds", "db"),
			others: []*v1alpha1.Sync{syncOf("platform", "crds", true), syncOf("apps", "db", true)}},
		{name: "a missing dependency is said so", sync: syncOf("apps", "web", false, "platform/crds"),
			wantReason: v1alpha1.ReasonDependencyNotReady, wantIn: []string{"Sync platform/crds does not exist"}},
		{name: "dependencies not Ready are each named", sync: syncOf("apps", "web", false, "platform/crds", "platform/operator", "db"),
			others:     []*v1alpha1.Sync{oldGen, applying, syncOf("apps", "db", false)},
			wantReason: v1alpha1.ReasonDependencyNotReady,
			wantIn:     []string{"platform/crds is not Ready at its current generation", "platform/operator is applying main@sha1:2", "apps/db is not Ready"}},
		{name: "a cycle through the Sync is refused, naming it", sync: syncOf("apps", "a", false, "b"),
			others:     []*v1alpha1.Sync{syncOf("apps", "b", true, "other/c"), syncOf("other", "c", true, "apps/a")},
			wantReason: v1alpha1.ReasonDependencyCycle, wantIn: []string{"apps/a → apps/b → other/c → apps/a"}},
		{name: "a Sync that depends on itself", sync: syncOf("apps", "a", false, "a"),
			wantReason: v1alpha1.ReasonDependencyCycle, wantIn: []string{"apps/a → apps/a"}},
		{name: "a cycle elsewhere is waited on, not reported by whoever depends on it", sync: syncOf("apps", "web", false, "x"),
			others:     []*v1alpha1.Sync{syncOf("apps", "x", false, "y"), syncOf("apps", "y", false, "x")},
			wantReason: v1alpha1.ReasonDependencyNotReady, wantIn: []string{"apps/x is not Ready"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			all := map[types.NamespacedName]*v1alpha1.Sync{{Namespace: tt.sync.Namespace, Name: tt.sync.Name}: tt.sync}
			for _, o := range tt.others {
				all[types.NamespacedName{Namespace: o.Namespace, Name: o.Name}] = o
			}
			err := plan.CheckDependencies(tt.sync, func(n types.NamespacedName) (*v1alpha1.Sync, bool) { s, ok := all[n]; return s, ok })
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("CheckDependencies() = %v, want nil", err)
				}
				return
			}
			var held *plan.HeldError
			var waiting *plan.WaitingError
			reason := ""
			switch {
			case errors.As(err, &held):
				reason = held.Reason
			case errors.As(err, &waiting):
				reason = waiting.Reason
			}
			if reason != tt.wantReason {
				t.Fatalf("CheckDependencies() = %v (reason %q), want reason %s", err, reason, tt.wantReason)
			}
			for _, s := range tt.wantIn {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message %q does not say %q", err, s)
				}
			}
		})
	}
}
