package plan

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

// rev is the revision of main at a commit made of c repeated.
func rev(c string) string { return "main@sha1:" + strings.Repeat(c, 40/len(c)) }

// judged starts a status whose objects were judged code, with history as given.
func judged(at time.Time, code v1alpha1.HealthStatusCode, history ...v1alpha1.HistoryEntry) *Status {
	obj := &v1alpha1.Sync{Status: v1alpha1.SyncStatus{History: history}}
	b := NewStatus(obj, func() time.Time { return at })
	appliedCleanly(b)
	b.ObjectHealth(configMap, v1alpha1.HealthHealthy, "")
	b.ObjectHealth(deployment, code, "rollout stuck")
	b.AggregateHealth()
	return b
}

func entry(r string, at time.Time, code v1alpha1.HealthStatusCode) v1alpha1.HistoryEntry {
	return v1alpha1.HistoryEntry{Revision: r, AppliedAt: metav1.NewTime(at), Health: code}
}

func TestHistory(t *testing.T) {
	at := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	t.Run("a new revision is a new entry, newest first, with its subject", func(t *testing.T) {
		b := judged(at, v1alpha1.HealthProgressing, entry(rev("a"), at.Add(-time.Hour), v1alpha1.HealthHealthy))
		b.History(rev("b"), "Fix the config map", "Ada")
		want := []v1alpha1.HistoryEntry{
			{Revision: rev("b"), AppliedAt: metav1.NewTime(at), Health: v1alpha1.HealthProgressing, Message: "Fix the config map", Author: "Ada"},
			entry(rev("a"), at.Add(-time.Hour), v1alpha1.HealthHealthy),
		}
		if diff := cmp.Diff(want, b.Build().History); diff != "" {
			t.Errorf("history (-want +got):\n%s", diff)
		}
	})
	t.Run("the same revision again updates the health it reached", func(t *testing.T) {
		b := judged(at, v1alpha1.HealthHealthy, entry(rev("b"), at.Add(-time.Minute), v1alpha1.HealthProgressing))
		if b.NeedsHistoryEntry(rev("b")) {
			t.Error("NeedsHistoryEntry of the newest revision = true")
		}
		b.History(rev("b"), "", "")
		if got := b.Build().History; len(got) != 1 || got[0].Health != v1alpha1.HealthHealthy || !got[0].AppliedAt.Time.Equal(at.Add(-time.Minute)) {
			t.Errorf("history = %+v, want one entry, Healthy, applied when it was first", got)
		}
	})
	t.Run("the time a revision first became Healthy is kept, once", func(t *testing.T) {
		b := judged(at, v1alpha1.HealthHealthy, entry(rev("b"), at.Add(-42*time.Second), v1alpha1.HealthProgressing))
		b.History(rev("b"), "", "")
		got := b.Build().History[0]
		if took := HealthyAfter(got); took != "42s" {
			t.Errorf("healthy after %q, want 42s", took)
		}
		later := judged(at.Add(time.Hour), v1alpha1.HealthHealthy, got)
		later.History(rev("b"), "", "")
		if took := HealthyAfter(later.Build().History[0]); took != "42s" {
			t.Errorf("healthy after %q once judged again, want 42s still", took)
		}
	})
	t.Run("a revision Healthy when applied took no time", func(t *testing.T) {
		b := judged(at, v1alpha1.HealthHealthy)
		b.History(rev("b"), "", "")
		if took := HealthyAfter(b.Build().History[0]); took != "0s" {
			t.Errorf("healthy after %q, want 0s", took)
		}
	})
	t.Run("a revision not Healthy yet has no time", func(t *testing.T) {
		b := judged(at, v1alpha1.HealthProgressing)
		b.History(rev("b"), "", "")
		if took := HealthyAfter(b.Build().History[0]); took != "" {
			t.Errorf("healthy after %q, want none", took)
		}
	})
	t.Run("a revision that reached Healthy stays Healthy", func(t *testing.T) {
		b := judged(at, v1alpha1.HealthDegraded, entry(rev("b"), at.Add(-time.Minute), v1alpha1.HealthHealthy))
		b.History(rev("b"), "", "")
		if got := b.Build().History[0].Health; got != v1alpha1.HealthHealthy {
			t.Errorf("health = %s, want Healthy (reached before)", got)
		}
	})
	t.Run("at most ten entries are kept", func(t *testing.T) {
		var h []v1alpha1.HistoryEntry
		for i := range v1alpha1.MaxHistory {
			h = append(h, entry(rev(fmt.Sprintf("%x", i)), at.Add(-time.Duration(i+1)*time.Hour), v1alpha1.HealthHealthy))
		}
		b := judged(at, v1alpha1.HealthHealthy, h...)
		b.History(rev("e"), "", "")
		got := b.Build().History
		if len(got) != v1alpha1.MaxHistory || got[0].Revision != rev("e") || got[len(got)-1].Revision != h[len(h)-2].Revision {
			t.Errorf("history of %d entries from %s to %s; want ten, the newest first and the oldest dropped", len(got), got[0].Revision, got[len(got)-1].Revision)
		}
	})
}

func TestCheckRollback(t *testing.T) {
	at := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	on := &v1alpha1.RollbackSpec{OnFailure: true, HealthTimeout: &metav1.Duration{Duration: time.Minute}}
	good := entry(rev("a"), at.Add(-time.Hour), v1alpha1.HealthHealthy)
	for _, tc := range []struct {
		name       string
		spec       *v1alpha1.RollbackSpec
		health     v1alpha1.HealthStatusCode
		history    []v1alpha1.HistoryEntry
		wantReason string
		wantWait   time.Duration
	}{
		{"off: nothing", nil, v1alpha1.HealthDegraded, []v1alpha1.HistoryEntry{entry(rev("b"), at, v1alpha1.HealthDegraded), good}, "", 0},
		{"a Degraded revision goes back to the last Healthy", on, v1alpha1.HealthDegraded, []v1alpha1.HistoryEntry{entry(rev("b"), at, v1alpha1.HealthDegraded), good}, v1alpha1.ReasonDegraded, 0},
		{"a revision still progressing within the timeout waits", on, v1alpha1.HealthProgressing, []v1alpha1.HistoryEntry{entry(rev("b"), at.Add(-20*time.Second), v1alpha1.HealthProgressing), good}, "", 40 * time.Second},
		{"a revision not Healthy after the timeout goes back", on, v1alpha1.HealthProgressing, []v1alpha1.HistoryEntry{entry(rev("b"), at.Add(-time.Minute), v1alpha1.HealthProgressing), good}, v1alpha1.ReasonHealthTimeout, 0},
		{"a suspended rollout is no failure", on, v1alpha1.HealthSuspended, []v1alpha1.HistoryEntry{entry(rev("b"), at.Add(-time.Hour), v1alpha1.HealthSuspended), good}, "", 0},
		{"a revision that reached Healthy is never rolled back", on, v1alpha1.HealthDegraded, []v1alpha1.HistoryEntry{entry(rev("b"), at.Add(-time.Hour), v1alpha1.HealthHealthy), good}, "", 0},
		{"no Healthy revision before: nowhere to go", on, v1alpha1.HealthDegraded, []v1alpha1.HistoryEntry{entry(rev("b"), at, v1alpha1.HealthDegraded), entry(rev("a"), at.Add(-time.Hour), v1alpha1.HealthDegraded)}, "", 0},
		{"the same commit applied earlier is no target", on, v1alpha1.HealthDegraded, []v1alpha1.HistoryEntry{entry(rev("b"), at, v1alpha1.HealthDegraded), entry(rev("b"), at.Add(-time.Hour), v1alpha1.HealthHealthy)}, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := judged(at, tc.health, tc.history...)
			b.History(tc.history[0].Revision, "", "")
			rb, wait := b.CheckRollback(tc.spec)
			if wait != tc.wantWait {
				t.Errorf("wait = %s, want %s", wait, tc.wantWait)
			}
			if tc.wantReason == "" {
				if rb != nil {
					t.Errorf("rollback %+v, want none", rb)
				}
				return
			}
			if rb == nil || rb.Reason != tc.wantReason || rb.To.Revision != good.Revision || rb.Failed.Revision != tc.history[0].Revision {
				t.Fatalf("rollback %+v, want %s from %s to %s", rb, tc.wantReason, tc.history[0].Revision, good.Revision)
			}
			b.RolledBack(*rb)
			st := b.Build()
			c := apimeta.FindStatusCondition(st.Conditions, v1alpha1.RolledBackCondition)
			if c == nil || c.Reason != tc.wantReason || !strings.Contains(c.Message, tc.history[0].Revision) || !strings.Contains(c.Message, "rollout stuck") {
				t.Errorf("RolledBack condition %+v, want %s naming the failed revision and why", c, tc.wantReason)
			}
			if st.Rollback == nil || st.Rollback.FailedRevision != tc.history[0].Revision || st.Rollback.Revision != good.Revision {
				t.Errorf("status.rollback = %+v", st.Rollback)
			}
		})
	}
}

func TestRollbackClearedAndPins(t *testing.T) {
	b := judged(time.Now(), v1alpha1.HealthHealthy)
	b.KeepRollback(v1alpha1.RollbackStatus{FailedRevision: rev("b"), Revision: rev("a"), Reason: v1alpha1.ReasonDegraded})
	b.Pinned(rev("a"), rev("c"))
	st := b.Build()
	if st.Rollback == nil || !apimeta.IsStatusConditionTrue(st.Conditions, v1alpha1.RolledBackCondition) || !apimeta.IsStatusConditionTrue(st.Conditions, v1alpha1.PinnedCondition) {
		t.Fatalf("status %+v, want the rollback kept and the pin said", st)
	}
	b.RollbackCleared()
	b.Unpinned()
	st = b.Build()
	if st.Rollback != nil || apimeta.FindStatusCondition(st.Conditions, v1alpha1.RolledBackCondition) != nil || apimeta.FindStatusCondition(st.Conditions, v1alpha1.PinnedCondition) != nil {
		t.Errorf("status %+v, want no rollback and no pin", st)
	}
}

func TestIsFullCommit(t *testing.T) {
	for s, want := range map[string]bool{strings.Repeat("a1", 20): true, "abc": false, strings.Repeat("A1", 20): false, strings.Repeat("g1", 20): false} {
		if IsFullCommit(s) != want {
			t.Errorf("IsFullCommit(%q) = %v", s, !want)
		}
	}
}
