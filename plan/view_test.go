package plan

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

func TestShortRevision(t *testing.T) {
	for rev, want := range map[string]string{
		"main@sha1:4f2c1a2b3c4d5e6f": "main@4f2c1a2",
		"sha1:4f2c1a2b3c4d5e6f":      "4f2c1a2",
		"main@sha1:abc":              "main@abc",
		"":                           "",
		"v1.2.0":                     "v1.2.0",
	} {
		if got := ShortRevision(rev); got != want {
			t.Errorf("ShortRevision(%q) = %q, want %q", rev, got, want)
		}
	}
}

func withConditions(gen int64, conds ...metav1.Condition) *v1alpha1.Sync {
	s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
	s.Status.Conditions = conds
	return s
}

func condOf(typ string, status metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: reason + " message", ObservedGeneration: gen}
}

func TestReadyAndFailing(t *testing.T) {
	for _, tc := range []struct {
		name          string
		s             *v1alpha1.Sync
		ready, reason string
	}{
		{"no status yet", withConditions(1), "Unknown", ""},
		{"ready", withConditions(2, condOf(v1alpha1.ReadyCondition, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, 2)), "True", ""},
		{"ready for an older spec is unknown", withConditions(3, condOf(v1alpha1.ReadyCondition, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, 2)), "Unknown", ""},
		{"stalled", withConditions(1,
			condOf(v1alpha1.ReadyCondition, metav1.ConditionFalse, v1alpha1.ReasonRenderFailed, 1),
			condOf(v1alpha1.StalledCondition, metav1.ConditionTrue, v1alpha1.ReasonRenderFailed, 1)), "False", v1alpha1.ReasonRenderFailed},
		{"retrying", withConditions(1, condOf(v1alpha1.ReadyCondition, metav1.ConditionFalse, v1alpha1.ReasonRetrying, 1)), "False", v1alpha1.ReasonRetrying},
		{"progressing is not failing", withConditions(1, condOf(v1alpha1.ReadyCondition, metav1.ConditionFalse, v1alpha1.ReasonProgressing, 1)), "False", ""},
		{"suspended is not failing", withConditions(1, condOf(v1alpha1.ReadyCondition, metav1.ConditionFalse, v1alpha1.ReasonSuspended, 1)), "False", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReadyStatus(tc.s); got != tc.ready {
				t.Errorf("ReadyStatus = %q, want %q", got, tc.ready)
			}
			reason, msg := Failing(tc.s)
			if reason != tc.reason || (reason != "" && msg != reason+" message") {
				t.Errorf("Failing = %q, %q; want reason %q", reason, msg, tc.reason)
			}
		})
	}
}

func TestAppliedSubjectIsTheHistoryEntryOfTheAppliedRevision(t *testing.T) {
	s := &v1alpha1.Sync{}
	s.Status.LastAppliedRevision = "main@sha1:bbb"
	s.Status.History = []v1alpha1.HistoryEntry{{Revision: "main@sha1:bbb", Message: "Add the api"}, {Revision: "main@sha1:aaa", Message: "First"}}
	if got := AppliedSubject(s); got != "Add the api" {
		t.Errorf("AppliedSubject = %q, want the newest entry's subject", got)
	}
	s.Status.LastAppliedRevision = "main@sha1:ccc"
	if got := AppliedSubject(s); got != "" {
		t.Errorf("AppliedSubject of a revision the history lacks = %q, want none", got)
	}
}

func TestTreeGroupsByNamespaceAndKindClusterScopedFirst(t *testing.T) {
	s := &v1alpha1.Sync{}
	s.Status.Objects = []v1alpha1.InventoryGroup{
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Names: []string{"api"}},
		{Version: "v1", Kind: "Namespace", Names: []string{"web"}},
		{Version: "v1", Kind: "ConfigMap", Namespace: "web", Names: []string{"b", "a"}},
	}
	s.Status.Resources = []v1alpha1.ResourceStatus{{
		ObjectRef: v1alpha1.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "api"},
		Sync:      v1alpha1.SyncStatusOutOfSync, Health: v1alpha1.HealthProgressing,
	}}
	names := func(tree []TreeNamespace) []string {
		var out []string
		for _, ns := range tree {
			for _, k := range ns.Kinds {
				for _, o := range k.Objects {
					out = append(out, ns.Namespace+" "+k.Kind+" "+o.Name+" "+string(o.Sync)+" "+string(o.Health))
				}
			}
		}
		return out
	}
	want := []string{
		"(cluster-scoped) Namespace web Synced Healthy",
		"web ConfigMap a Synced Healthy",
		"web ConfigMap b Synced Healthy",
		"web Deployment.apps api OutOfSync Progressing",
	}
	if diff := cmp.Diff(want, names(Tree(s))); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
	s.Spec.Suspend = true
	for _, line := range names(Tree(s)) {
		if !strings.Contains(line, " Unknown ") {
			t.Errorf("suspended: %q, want sync Unknown (nothing compared)", line)
		}
	}
}
