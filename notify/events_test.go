package notify

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

const (
	shaA = "4f2c1a9e0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e"
	shaB = "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b"
)

// syncAt is a Sync of namespace team-a as the reconciler reports it: fetched
// fetched, applied applied, with health and a Ready condition.
func syncAt(fetched, applied string, health v1alpha1.HealthStatusCode, ready metav1.ConditionStatus, reason, msg string) *v1alpha1.Sync {
	s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web", Generation: 1}}
	s.Spec.Source.URL = "https://git.example.com/team-a/deploy.git"
	s.Status.SourceRevision, s.Status.LastAppliedRevision, s.Status.Health = fetched, applied, health
	if ready != "" {
		s.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: ready, Reason: reason, Message: msg, ObservedGeneration: 1}}
	}
	return s
}

func kinds(events []Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Kind+"/"+string(e.Severity))
	}
	return out
}

func TestEventsOfTellWhatChanged(t *testing.T) {
	revA, revB := "main@sha1:"+shaA, "main@sha1:"+shaB
	healthy := syncAt(revA, revA, v1alpha1.HealthHealthy, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
	progressingB := syncAt(revB, revB, v1alpha1.HealthProgressing, metav1.ConditionFalse, v1alpha1.ReasonProgressing, "")
	healthyB := syncAt(revB, revB, v1alpha1.HealthHealthy, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
	refusedB := syncAt(revB, revA, v1alpha1.HealthHealthy, metav1.ConditionFalse, v1alpha1.ReasonValidationFailed, "Deployment/team-a/web: spec.replicas: invalid")
	degradedB := syncAt(revB, revB, v1alpha1.HealthDegraded, metav1.ConditionFalse, v1alpha1.ReasonProgressing, "")
	degradedB.Status.Resources = []v1alpha1.ResourceStatus{{ObjectRef: v1alpha1.ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "team-a", Name: "web"}, Health: v1alpha1.HealthDegraded, Message: "ImagePullBackOff"}}
	suspended := healthy.DeepCopy()
	suspended.Spec.Suspend = true
	suspended.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl-patch", Time: &metav1.Time{Time: time.Unix(100, 0)}}}
	driftOff := healthy.DeepCopy()
	off := false
	driftOff.Spec.SelfHeal = &off
	drifted := driftOff.DeepCopy()
	drifted.Status.Sync = v1alpha1.SyncStatusOutOfSync
	rolledBack := healthy.DeepCopy()
	rolledBack.Status.Rollback = &v1alpha1.RollbackStatus{FailedRevision: revB, Revision: revA, Reason: v1alpha1.ReasonDegraded}

	for _, tc := range []struct {
		name     string
		old, cur *v1alpha1.Sync
		want     []string
	}{
		{"a Sync first seen tells nothing", nil, healthy, nil},
		{"nothing changed tells nothing", healthy, healthy.DeepCopy(), nil},
		{"a new revision applied", healthy, progressingB, []string{"Applied/info"}},
		{"then healthy", progressingB, healthyB, []string{"Healthy/info"}},
		{"a revision refused names the object", healthy, refusedB, []string{"Failed/error"}},
		{"the same refusal again tells nothing", refusedB, refusedB.DeepCopy(), nil},
		{"degraded", progressingB, degradedB, []string{"Degraded/error"}},
		{"suspended by a person", healthy, suspended, []string{"Suspended/info"}},
		{"resumed", suspended, healthy, []string{"Resumed/info"}},
		{"drift left alone with selfHeal off", driftOff, drifted, []string{"DriftDetected/info"}},
		{"drift corrected by selfHeal tells nothing here", healthy, func() *v1alpha1.Sync { s := healthy.DeepCopy(); s.Status.Sync = v1alpha1.SyncStatusOutOfSync; return s }(), nil},
		{"an automatic rollback", healthy, rolledBack, []string{"RolledBack/error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := EventsOf(tc.old, tc.cur, time.Unix(0, 0))
			if diff := cmp.Diff(tc.want, kinds(got)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("a failure's message names the object and the revision", func(t *testing.T) {
		e := EventsOf(healthy, refusedB, time.Unix(0, 0))[0]
		if e.Reason != v1alpha1.ReasonValidationFailed || e.Revision != revB || e.Message != "Deployment/team-a/web: spec.replicas: invalid" {
			t.Errorf("event = %+v", e)
		}
		if got, want := e.Title(), "team-a/web: Failed main@9a8b7c6"; got != want {
			t.Errorf("title = %q, want %q", got, want)
		}
	})
	t.Run("degraded names the object and why", func(t *testing.T) {
		e := EventsOf(progressingB, degradedB, time.Unix(0, 0))[0]
		if want := "Deployment.apps/team-a/web: ImagePullBackOff"; e.Message != want && e.Message != "Deployment/team-a/web: ImagePullBackOff" {
			t.Errorf("message = %q, want %q", e.Message, want)
		}
	})
	t.Run("a suspend names who", func(t *testing.T) {
		if e := EventsOf(healthy, suspended, time.Unix(0, 0))[0]; e.Message != "by kubectl-patch" {
			t.Errorf("message = %q", e.Message)
		}
	})
}

func TestCommitsOfAreALevel(t *testing.T) {
	revA, revB := "main@sha1:"+shaA, "main@sha1:"+shaB
	for _, tc := range []struct {
		name string
		s    *v1alpha1.Sync
		want []CommitState
	}{
		{"nothing fetched yet", syncAt("", "", "", "", "", ""), nil},
		{"fetched, not applied yet: pending", syncAt(revB, revA, v1alpha1.HealthHealthy, metav1.ConditionFalse, v1alpha1.ReasonProgressing, ""), []CommitState{CommitPending}},
		{"applied, rolling out: pending", syncAt(revB, revB, v1alpha1.HealthProgressing, metav1.ConditionFalse, v1alpha1.ReasonProgressing, ""), []CommitState{CommitPending}},
		{"healthy and ready: success", syncAt(revB, revB, v1alpha1.HealthHealthy, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, ""), []CommitState{CommitSuccess}},
		{"degraded: failure", syncAt(revB, revB, v1alpha1.HealthDegraded, metav1.ConditionFalse, v1alpha1.ReasonProgressing, ""), []CommitState{CommitFailure}},
		{"refused: failure", syncAt(revB, revA, v1alpha1.HealthHealthy, metav1.ConditionFalse, v1alpha1.ReasonRenderFailed, "kustomization.yaml: bad"), []CommitState{CommitFailure}},
		{"rolled back: the failed one failure, the one applied its own", func() *v1alpha1.Sync {
			s := syncAt(revB, revA, v1alpha1.HealthHealthy, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
			s.Status.Rollback = &v1alpha1.RollbackStatus{FailedRevision: revB, Revision: revA, Reason: v1alpha1.ReasonDegraded}
			return s
		}(), []CommitState{CommitFailure, CommitSuccess}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []CommitState
			for _, c := range CommitsOf(tc.s) {
				got = append(got, c.State)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("states (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAlertOfFiresWhileASyncFails(t *testing.T) {
	rev := "main@sha1:" + shaA
	if a := AlertOf(syncAt(rev, rev, v1alpha1.HealthHealthy, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")); a.Firing {
		t.Errorf("a healthy Sync fires %+v", a)
	}
	if a := AlertOf(syncAt(rev, rev, v1alpha1.HealthHealthy, metav1.ConditionFalse, v1alpha1.ReasonRenderFailed, "kustomization.yaml: bad")); !a.Firing || a.Reason != v1alpha1.ReasonRenderFailed {
		t.Errorf("a failing Sync's alert is %+v", a)
	}
	if a := AlertOf(syncAt(rev, rev, v1alpha1.HealthDegraded, metav1.ConditionFalse, v1alpha1.ReasonProgressing, "")); !a.Firing || a.Reason != v1alpha1.ReasonDegraded {
		t.Errorf("a degraded Sync's alert is %+v", a)
	}
}
