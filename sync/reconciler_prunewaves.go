package sync

import (
	"context"
	"fmt"
	"strings"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/plan"
)

// pruneInWaves deletes candidates in reverse wave order (plan.PruneWaves): every
// candidate is read first (a dry-run prune) for the wave it was applied with, then
// the objects of the highest wave are deleted, and those of the next lower wave
// only once the API server no longer holds them (an object with finalizers stays
// terminating until its controller lets it go), as Argo CD waits for pruned
// objects before its next wave. Within a wave apply.Prune keeps CRDs and
// Namespaces last.
//
// It records in st what left the inventory and returns the change set of
// everything it judged and deleted, for events and metrics. While a wave's objects
// are terminating, they and the lower waves stay in the inventory and the error is
// a *plan.WaitingError naming them: the next reconcile (their deletion queues
// it, runRequeue is the safety net) goes on from there.
//
// next, when not empty, names what waits for the lowest wave to be gone too (the
// PostSync phase).
func (r *Reconciler) pruneInWaves(ctx context.Context, id Identity, st *plan.Status, candidates []v1alpha1.ObjectRef, opts apply.PruneOptions, next string) (*apply.ChangeSet, error) {
	judge := opts
	judge.DryRun = true
	judged, err := id.Applier.Prune(ctx, candidates, judge)
	// What the prune would not delete (gone, not Tether's, protected) or could not
	// read is recorded as it is; an unreadable object's wave is unknown, so nothing
	// is deleted until it reads.
	all := &apply.ChangeSet{Changes: notDeleted(judged)}
	if err != nil {
		st.Pruned(all)
		return all, err
	}
	waves := plan.PruneWaves(judged.Changes)
	for i, w := range waves {
		cs, err := id.Applier.Prune(ctx, w.Objects, opts)
		all.Changes = append(all.Changes, cs.Changes...)
		then := next
		if i < len(waves)-1 {
			then = fmt.Sprintf("wave %d is pruned", waves[i+1].Wave)
		}
		if err != nil || then == "" {
			st.Pruned(all)
			return all, err
		}
		still, err := id.Applier.Prune(ctx, deleted(cs), judge)
		if err == nil && still.Count(apply.ActionPruned) == 0 {
			continue
		}
		return all, r.waitForPruneWave(st, all, still, err, w, then)
	}
	st.Pruned(all)
	return all, nil
}

// waitForPruneWave records a prune that stops at wave w: the objects of w still in
// the cluster (still) stay in the inventory as deleting, those of the lower waves
// as not pruned yet; it returns the error that says so (then: what waits).
func (r *Reconciler) waitForPruneWave(st *plan.Status, all, still *apply.ChangeSet, readErr error, w plan.PruneWave, then string) error {
	terminating := &apply.ChangeSet{}
	there := map[string]bool{}
	for _, c := range still.Changes {
		if c.Action == apply.ActionPruned || c.Action == apply.ActionFailed {
			c.Action = apply.ActionPruned
			terminating.Changes = append(terminating.Changes, c)
			there[c.Object.Key()] = true
		}
	}
	gone := &apply.ChangeSet{}
	for _, c := range all.Changes {
		if !there[c.Object.Key()] {
			gone.Changes = append(gone.Changes, c)
		}
	}
	st.Pruned(gone)
	st.Deleting(terminating)
	st.LeftGitNote(fmt.Sprintf("pruned once wave %d is deleted", w.Wave))
	if readErr != nil {
		return readErr
	}
	names := make([]string, 0, len(terminating.Changes))
	for _, c := range terminating.Changes {
		names = append(names, c.Object.String())
	}
	return &plan.WaitingError{Reason: v1alpha1.ReasonProgressing, Msg: fmt.Sprintf(
		"prune wave %d: waiting for %s to be deleted before %s", w.Wave, strings.Join(names, ", "), then)}
}

// notDeleted are the changes of a dry-run prune that would delete nothing.
func notDeleted(cs *apply.ChangeSet) []apply.Change {
	var out []apply.Change
	for _, c := range cs.Changes {
		if c.Action != apply.ActionPruned {
			out = append(out, c)
		}
	}
	return out
}

// deleted are the objects a prune deleted or found terminating.
func deleted(cs *apply.ChangeSet) []v1alpha1.ObjectRef {
	var out []v1alpha1.ObjectRef
	for _, c := range cs.Changes {
		if c.Action == apply.ActionPruned {
			out = append(out, c.Object)
		}
	}
	return out
}
