package plan

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

// maxHooks bounds status.hooks; the oldest entries are forgotten first (their
// objects are left in the cluster, labelled with HookLabel).
const maxHooks = 100

// Waiting records a step that waits for something outside this reconcile (a
// dependency to be Ready, a wave to be Healthy): not Ready, still working on it,
// not Stalled.
func (b *Status) Waiting(reason string, err error) {
	b.set(v1alpha1.ReadyCondition, metav1.ConditionFalse, reason, err.Error())
	b.set(v1alpha1.ReconcilingCondition, metav1.ConditionTrue, reason, err.Error())
	b.remove(v1alpha1.StalledCondition)
}

// RunFrom records run as where the ordered run stands, before this reconcile moves
// it on: the freshest record of it (the agent's own, when the status it read lags).
func (b *Status) RunFrom(run *v1alpha1.RunStatus) {
	if run != nil {
		run = run.DeepCopy()
	}
	b.status.Run = run
}

// RunAt records the phase and wave an ordered run of rev is at, and what it waits
// for.
func (b *Status) RunAt(rev string, phase Phase, wave int, msg string) {
	b.status.Run = &v1alpha1.RunStatus{Revision: rev, Phase: string(phase), Wave: int32(wave), State: v1alpha1.RunRunning, Message: msg}
}

// RunFailed records where an ordered run of rev failed, and why.
func (b *Status) RunFailed(rev string, phase Phase, wave int, reason, msg string) {
	b.status.Run = &v1alpha1.RunStatus{Revision: rev, Phase: string(phase), Wave: int32(wave), State: v1alpha1.RunFailed, Reason: reason, Message: msg}
}

// RunSucceeded records that every phase and wave of rev completed.
func (b *Status) RunSucceeded(rev string) {
	b.status.Run = &v1alpha1.RunStatus{Revision: rev, State: v1alpha1.RunSucceeded}
}

// Run is the ordered run this status records, if any.
func (b *Status) Run() *v1alpha1.RunStatus { return b.status.Run }

// Hooks are the hook objects the status records as created and not yet deleted.
func (b *Status) Hooks() []v1alpha1.HookStatus { return b.status.Hooks }

// HooksCreated records hook objects created (or found) for a run, replacing the
// entries of the same objects.
func (b *Status) HooksCreated(hooks []v1alpha1.HookStatus) {
	for _, h := range hooks {
		b.status.Hooks = slices.DeleteFunc(b.status.Hooks, func(o v1alpha1.HookStatus) bool { return o.Key() == h.Key() })
		b.status.Hooks = append(b.status.Hooks, h)
	}
	if n := len(b.status.Hooks); n > maxHooks {
		b.status.Hooks = b.status.Hooks[n-maxHooks:]
	}
}

// HooksDeleted forgets hook objects that are gone.
func (b *Status) HooksDeleted(refs []v1alpha1.ObjectRef) {
	for _, r := range refs {
		b.status.Hooks = slices.DeleteFunc(b.status.Hooks, func(o v1alpha1.HookStatus) bool { return o.Key() == r.Key() })
	}
	if len(b.status.Hooks) == 0 {
		b.status.Hooks = nil
	}
}

// HookStatusOf is the status entry of a hook created for run.
func HookStatusOf(h Hook) v1alpha1.HookStatus {
	policies := make([]string, len(h.Policies))
	for i, p := range h.Policies {
		policies[i] = string(p)
	}
	return v1alpha1.HookStatus{ObjectRef: h.Ref(), Run: h.Object.GetAnnotations()[HookRunAnnotation], DeletePolicies: policies}
}

// MergeRun returns the status.run to write when the status changed under a
// reconcile (a conflict): its own, when it moved the run on from base (the status
// it started from); otherwise cur's, the newer writer's.
func MergeRun(base, ours, cur *v1alpha1.RunStatus) *v1alpha1.RunStatus {
	if equality.Semantic.DeepEqual(base, ours) {
		return cur
	}
	return ours
}

// MergeHooks returns the status.hooks to write on a conflict: this reconcile's
// entries, and those a newer writer added since base. An entry this reconcile
// dropped (its object deleted) stays dropped.
func MergeHooks(base, ours, cur []v1alpha1.HookStatus) []v1alpha1.HookStatus {
	inBase := map[string]bool{}
	for _, h := range base {
		inBase[h.Key()] = true
	}
	out := slices.Clone(ours)
	have := map[string]bool{}
	for _, h := range ours {
		have[h.Key()] = true
	}
	for _, h := range cur {
		if !inBase[h.Key()] && !have[h.Key()] {
			out = append(out, h)
			have[h.Key()] = true
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
