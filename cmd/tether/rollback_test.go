package main

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

func TestPinLanded(t *testing.T) {
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	cond := func(typ, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason, Message: msg}
	}
	sync := func(applied string, conds ...metav1.Condition) *v1alpha1.Sync {
		s := &v1alpha1.Sync{}
		s.Status.LastAppliedRevision, s.Status.SourceRevision, s.Status.Conditions = "main@sha1:"+applied, "main@sha1:"+b, conds
		return s
	}
	ready := cond(v1alpha1.ReadyCondition, v1alpha1.ReasonSucceeded, "Applied")
	pinned := cond(v1alpha1.PinnedCondition, v1alpha1.ReasonPinned, "Pinned")
	stalled := cond(v1alpha1.StalledCondition, v1alpha1.ReasonPinInvalid, "bad pin")
	for _, tc := range []struct {
		name          string
		s             *v1alpha1.Sync
		commit, since string
		want          verdict
	}{
		{"pinned and applied", sync(a, ready, pinned), a, "", succeeded},
		{"not applied yet", sync(b, ready), a, "", pending},
		{"a new stall fails", sync(b, stalled), a, "", failed},
		{"the stall from before the pin waits", sync(b, stalled), a, "bad pin", pending},
		{"unpinned and at git's", sync(b, ready), "", "", succeeded},
		{"still pinned", sync(a, ready, pinned), "", "", pending},
	} {
		if got := pinLanded(tc.s, tc.commit, tc.since); got.verdict != tc.want {
			t.Errorf("%s: %+v, want verdict %d", tc.name, got, tc.want)
		}
	}
}
