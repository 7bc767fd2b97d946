package plan_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

func hook(name string) v1alpha1.HookStatus {
	return v1alpha1.HookStatus{ObjectRef: v1alpha1.ObjectRef{Group: "batch", Version: "v1", Kind: "Job", Namespace: "app", Name: name}}
}

// A reconcile that read a status older than the newest (a cache that lags) and
// meets a conflict keeps what a newer writer recorded of the run and its hooks.
func TestMergeOrderOnAConflict(t *testing.T) {
	t.Parallel()
	running := &v1alpha1.RunStatus{Revision: "r1", State: v1alpha1.RunRunning}
	done := &v1alpha1.RunStatus{Revision: "r1", State: v1alpha1.RunSucceeded}
	if got := plan.MergeRun(running, running, done); got != done {
		t.Errorf("MergeRun of a run this reconcile left alone = %+v, want the newer writer's", got)
	}
	failed := &v1alpha1.RunStatus{Revision: "r1", State: v1alpha1.RunFailed}
	if got := plan.MergeRun(running, failed, done); got != failed {
		t.Errorf("MergeRun of a run this reconcile moved on = %+v, want its own", got)
	}

	tests := []struct {
		name            string
		base, ours, cur []v1alpha1.HookStatus
		want            []v1alpha1.HookStatus
	}{
		{name: "a hook recorded by a newer writer is kept", base: nil, ours: nil, cur: []v1alpha1.HookStatus{hook("a")}, want: []v1alpha1.HookStatus{hook("a")}},
		{name: "a hook this reconcile deleted stays deleted", base: []v1alpha1.HookStatus{hook("a")}, ours: nil, cur: []v1alpha1.HookStatus{hook("a")}, want: nil},
		{name: "both add", base: nil, ours: []v1alpha1.HookStatus{hook("b")}, cur: []v1alpha1.HookStatus{hook("a"), hook("b")}, want: []v1alpha1.HookStatus{hook("b"), hook("a")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, plan.MergeHooks(tt.base, tt.ours, tt.cur)); diff != "" {
				t.Errorf("MergeHooks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunFromCopiesTheRun(t *testing.T) {
	t.Parallel()
	st := plan.NewStatus(&v1alpha1.Sync{}, nil)
	run := &v1alpha1.RunStatus{Revision: "r1", State: v1alpha1.RunFailed}
	st.RunFrom(run)
	run.State = v1alpha1.RunRunning
	if got := st.Run(); got == nil || got.State != v1alpha1.RunFailed {
		t.Errorf("Run() = %+v, want the Failed run as it was handed in", got)
	}
}

func TestHooksSkippedAreNamedOnceInSourceReady(t *testing.T) {
	t.Parallel()
	st := plan.NewStatus(&v1alpha1.Sync{}, time.Now)
	st.HooksSkipped([]v1alpha1.ObjectRef{{Version: "v1", Kind: "Pod", Name: "web-test"}}) // no SourceReady yet: nothing to say
	st.Rendered("main@sha1:1", 3)
	skipped := []v1alpha1.ObjectRef{{Version: "v1", Kind: "Pod", Name: "web-test"}, {Group: "batch", Version: "v1", Kind: "Job", Name: "cleanup"}}
	st.HooksSkipped(skipped)
	st.HooksSkipped(skipped) // a second pass of the same reconcile
	st.HooksSkipped(nil)
	c := apimeta.FindStatusCondition(st.Build().Conditions, v1alpha1.SourceReadyCondition)
	want := "Fetched revision main@sha1:1: 3 objects; hooks skipped (not applied): Pod/web-test, Job/cleanup"
	if c == nil || c.Message != want {
		t.Errorf("SourceReady = %+v, want the message %q", c, want)
	}
}
