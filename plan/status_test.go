package plan

import (
	"errors"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply/contract"
	"tether.dev/tether/source/result"
)

// cond is what a test expects of one condition: its status and reason, and a piece
// of its message. A zero cond says the condition is absent.
type cond struct {
	status metav1.ConditionStatus
	reason string
	says   string
}

var (
	configMap  = v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "settings"}
	deployment = v1alpha1.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "frontend"}
)

// appliedCleanly is an apply that left both objects as git has them.
func appliedCleanly(b *Status) {
	b.Applied(&contract.ChangeSet{Changes: []contract.Change{
		{Object: configMap, Action: contract.ActionUnchanged},
		{Object: deployment, Action: contract.ActionConfigured},
	}})
}

func TestTheConditionsOfEachOutcome(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	gitDown := &result.FetchError{Reason: v1alpha1.ReasonHostUnreachable, Err: errors.New("dial tcp 127.0.0.1:1: connection refused")}
	for _, tc := range []struct {
		name string
		// previous is the status before the reconcile.
		previous v1alpha1.SyncStatus
		steps    func(b *Status)
		want     map[string]cond
		wantSync v1alpha1.SyncStatusCode
	}{{
		name: "ready: a revision applied in full to healthy objects",
		steps: func(b *Status) {
			b.Fetched("main@sha1:abc")
			b.Rendered("main@sha1:abc", 2)
			appliedCleanly(b)
			b.ObjectHealth(configMap, v1alpha1.HealthHealthy, "")
			b.ObjectHealth(deployment, v1alpha1.HealthHealthy, "")
			b.AggregateHealth()
			b.Ready("main@sha1:abc", true)
		},
		want: map[string]cond{
			v1alpha1.ReadyCondition:       {metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "Applied revision main@sha1:abc"},
			v1alpha1.SourceReadyCondition: {metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "2 objects"},
			v1alpha1.HealthyCondition:     {metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "All managed objects are healthy"},
			v1alpha1.ReconcilingCondition: {},
			v1alpha1.StalledCondition:     {},
		},
		wantSync: v1alpha1.SyncStatusSynced,
	}, {
		name: "ready with wait: Ready waits for a roll-out and says which object",
		steps: func(b *Status) {
			appliedCleanly(b)
			b.ObjectHealth(configMap, v1alpha1.HealthHealthy, "")
			b.ObjectHealth(deployment, v1alpha1.HealthProgressing, "1 of 3 replicas updated")
			b.AggregateHealth()
			b.Ready("main@sha1:abc", true)
		},
		want: map[string]cond{
			v1alpha1.ReadyCondition:       {metav1.ConditionUnknown, v1alpha1.ReasonProgressing, "Deployment/frontend Progressing: 1 of 3 replicas updated"},
			v1alpha1.HealthyCondition:     {metav1.ConditionFalse, v1alpha1.ReasonProgressing, "1 of 2 objects not healthy"},
			v1alpha1.ReconcilingCondition: {metav1.ConditionTrue, v1alpha1.ReasonProgressing, "Waiting for objects to roll out"},
		},
		wantSync: v1alpha1.SyncStatusSynced,
	}, {
		name: "stalled: a render failure marks the source and holds the Sync out of sync",
		previous: v1alpha1.SyncStatus{Conditions: []metav1.Condition{
			{Type: v1alpha1.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRetrying},
		}},
		steps: func(b *Status) {
			b.Stalled(v1alpha1.ReasonRenderFailed, &result.RenderError{File: "apps/web/deploy.yaml", Err: errors.New("yaml: line 3: mapping values are not allowed")})
		},
		want: map[string]cond{
			v1alpha1.ReadyCondition:       {metav1.ConditionFalse, v1alpha1.ReasonRenderFailed, "line 3"},
			v1alpha1.StalledCondition:     {metav1.ConditionTrue, v1alpha1.ReasonRenderFailed, "line 3"},
			v1alpha1.SourceReadyCondition: {metav1.ConditionFalse, v1alpha1.ReasonRenderFailed, "line 3"},
			v1alpha1.ReconcilingCondition: {},
		},
		wantSync: v1alpha1.SyncStatusOutOfSync,
	}, {
		name: "stalled: a refusal that is not the source's leaves SourceReady alone",
		steps: func(b *Status) {
			b.Rendered("main@sha1:abc", 0)
			b.Stalled(v1alpha1.ReasonEmptyRender, &HeldError{Reason: v1alpha1.ReasonEmptyRender, Msg: "path \"apps\" renders no objects"})
		},
		want: map[string]cond{
			v1alpha1.ReadyCondition:       {metav1.ConditionFalse, v1alpha1.ReasonEmptyRender, "renders no objects"},
			v1alpha1.StalledCondition:     {metav1.ConditionTrue, v1alpha1.ReasonEmptyRender, "renders no objects"},
			v1alpha1.SourceReadyCondition: {metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "0 objects"},
		},
		wantSync: v1alpha1.SyncStatusOutOfSync,
	}, {
		name: "retrying: a transient failure clears Stalled and keeps reconciling",
		previous: v1alpha1.SyncStatus{Conditions: []metav1.Condition{
			{Type: v1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonEmptyRender},
		}},
		steps: func(b *Status) {
			b.Retrying(v1alpha1.ReasonReconcileFailed, errors.New("the API server is shutting down"))
		},
		want: map[string]cond{
			v1alpha1.ReadyCondition:       {metav1.ConditionFalse, v1alpha1.ReasonReconcileFailed, "shutting down"},
			v1alpha1.ReconcilingCondition: {metav1.ConditionTrue, v1alpha1.ReasonRetrying, "shutting down"},
			v1alpha1.StalledCondition:     {},
		},
	}, {
		name: "suspended: Ready is Unknown and every object's sync is unknown",
		previous: v1alpha1.SyncStatus{
			Sync:      v1alpha1.SyncStatusSynced,
			Resources: []v1alpha1.ResourceStatus{{ObjectRef: configMap, Sync: v1alpha1.SyncStatusSynced}},
		},
		steps: func(b *Status) { b.Suspended() },
		want: map[string]cond{
			v1alpha1.ReadyCondition:       {metav1.ConditionUnknown, v1alpha1.ReasonSuspended, "suspended"},
			v1alpha1.ReconcilingCondition: {metav1.ConditionFalse, v1alpha1.ReasonSuspended, "suspended"},
		},
		wantSync: v1alpha1.SyncStatusUnknown,
	}, {
		name: "source failed: git unreachable is retried, with the git failure's reason",
		steps: func(b *Status) {
			b.SourceFailed(gitDown.Reason, gitDown)
		},
		want: map[string]cond{
			v1alpha1.SourceReadyCondition: {metav1.ConditionFalse, v1alpha1.ReasonHostUnreachable, "connection refused"},
			v1alpha1.ReadyCondition:       {metav1.ConditionFalse, v1alpha1.ReasonHostUnreachable, "connection refused"},
			v1alpha1.ReconcilingCondition: {metav1.ConditionTrue, v1alpha1.ReasonRetrying, "connection refused"},
			v1alpha1.StalledCondition:     {},
		},
	}, {
		name: "applied with drift: selfHeal off, Ready says the cluster drifted",
		steps: func(b *Status) {
			b.Applied(&contract.ChangeSet{DryRun: true, Changes: []contract.Change{
				{Object: configMap, Action: contract.ActionUnchanged},
				{Object: deployment, Action: contract.ActionConfigured, Diff: []string{"spec.replicas"}},
			}})
			b.Ready("main@sha1:abc", false)
		},
		want: map[string]cond{
			v1alpha1.ReadyCondition:   {metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the cluster has drifted from it and selfHeal is off"},
			v1alpha1.StalledCondition: {},
		},
		wantSync: v1alpha1.SyncStatusOutOfSync,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewStatus(&v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Status: tc.previous}, func() time.Time { return at })
			tc.steps(b)
			st := b.Build()
			for typ, want := range tc.want {
				got := apimeta.FindStatusCondition(st.Conditions, typ)
				switch {
				case want == (cond{}) && got != nil:
					t.Errorf("%s = %s/%s %q, want it absent", typ, got.Status, got.Reason, got.Message)
				case want == (cond{}):
				case got == nil:
					t.Errorf("%s absent, want %s/%s", typ, want.status, want.reason)
				case got.Status != want.status || got.Reason != want.reason || !strings.Contains(got.Message, want.says):
					t.Errorf("%s = %s/%s %q, want %s/%s saying %q", typ, got.Status, got.Reason, got.Message, want.status, want.reason, want.says)
				case got.ObservedGeneration != 3:
					t.Errorf("%s observed generation %d, want 3", typ, got.ObservedGeneration)
				}
			}
			if tc.wantSync != "" && st.Sync != tc.wantSync {
				t.Errorf("sync = %s, want %s", st.Sync, tc.wantSync)
			}
			for _, r := range st.Resources {
				if tc.wantSync == v1alpha1.SyncStatusUnknown && r.Sync != v1alpha1.SyncStatusUnknown {
					t.Errorf("%s sync = %s while suspended, want Unknown", r.ObjectRef, r.Sync)
				}
			}
		})
	}
}

func TestLastAppliedTimeMovesOnlyWithTheRevision(t *testing.T) {
	first := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	b := NewStatus(&v1alpha1.Sync{}, func() time.Time { return first })
	b.Ready("main@sha1:abc", false)
	st := b.Build()

	later := first.Add(time.Hour)
	for _, tc := range []struct {
		rev  string
		want time.Time
	}{{"main@sha1:abc", first}, {"main@sha1:def", later}} {
		again := NewStatus(&v1alpha1.Sync{Status: st}, func() time.Time { return later })
		again.Ready(tc.rev, false)
		if got := again.Build().LastAppliedTime; got == nil || !got.Time.Equal(tc.want) {
			t.Errorf("after applying %s: lastAppliedTime = %v, want %v", tc.rev, got, tc.want)
		}
	}
}

func TestALongMessageIsCutToFitTheStatus(t *testing.T) {
	b := NewStatus(&v1alpha1.Sync{}, time.Now)
	b.Stalled(v1alpha1.ReasonValidationFailed, errors.New(strings.Repeat("x", 3*maxMessage)))
	c := apimeta.FindStatusCondition(b.Build().Conditions, v1alpha1.ReadyCondition)
	if c == nil || len(c.Message) != maxMessage || !strings.HasSuffix(c.Message, "...") {
		t.Fatalf("Ready message of %d bytes, want %d ending in ...", len(c.Message), maxMessage)
	}
}

func TestAProgressingSyncIsLookedAtSooner(t *testing.T) {
	for _, tc := range []struct {
		health   v1alpha1.HealthStatusCode
		interval time.Duration
		want     time.Duration
	}{
		{v1alpha1.HealthHealthy, 5 * time.Minute, 5 * time.Minute},
		{v1alpha1.HealthProgressing, 5 * time.Minute, progressingRequeue},
		{v1alpha1.HealthProgressing, 5 * time.Second, 5 * time.Second},
	} {
		b := NewStatus(&v1alpha1.Sync{}, time.Now)
		appliedCleanly(b)
		b.ObjectHealth(deployment, tc.health, "")
		b.AggregateHealth()
		if got := b.RequeueAfter(tc.interval); got != tc.want {
			t.Errorf("%s at interval %s: requeue after %s, want %s", tc.health, tc.interval, got, tc.want)
		}
	}
}
