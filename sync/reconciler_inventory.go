package sync

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/plan"
	"tether.dev/tether/source"
)

// prune deletes the objects that left git (diff.Stale), within the Sync's limits,
// in reverse wave order (pruneInWaves), and records the outcome in the inventory.
// It runs only after an apply without failures.
func (r *Reconciler) prune(ctx context.Context, id Identity, obj *v1alpha1.Sync, st *plan.Status, snap *source.Snapshot, applied *apply.ChangeSet, diff plan.InventoryDiff) (*apply.ChangeSet, error) {
	return r.pruneBefore(ctx, id, obj, st, snap, applied, diff, "")
}

// pruneBefore prunes as prune does; then, when next names what comes after the
// prune ("the PostSync phase"), the objects deleted must be gone first.
func (r *Reconciler) pruneBefore(ctx context.Context, id Identity, obj *v1alpha1.Sync, st *plan.Status, snap *source.Snapshot, applied *apply.ChangeSet, diff plan.InventoryDiff, next string) (*apply.ChangeSet, error) {
	candidates := diff.Stale
	switch {
	case len(candidates) == 0:
		return nil, nil
	case !obj.Spec.PruneEnabled():
		st.LeftGitNote("prune is off")
		return nil, nil
	}
	if err := plan.CheckPruneLimit(obj, len(candidates), diff.Before, len(snap.Objects) == 0); err != nil {
		st.LeftGitNote("prune held back")
		return nil, err
	}
	cs, err := r.pruneInWaves(ctx, id, st, candidates, plan.PruneOptionsFor(obj, applied, r.Agent.ApplyOptions.Concurrency), next)
	r.Observers.Metrics.CountChanges(obj, cs)
	r.reportVanishedKinds(obj, cs)
	return cs, err
}

// pruneSummary names what a prune did, for events.
func pruneSummary(cs *apply.ChangeSet) string {
	if cs == nil {
		return ""
	}
	var names []string
	for _, c := range cs.Changes {
		if c.Action == apply.ActionPruned {
			names = append(names, c.Object.String())
		}
	}
	return strings.Join(names, ", ")
}

// recordAhead returns the write-ahead step of one reconcile's apply: before objects
// are written, those the Sync's inventory does not name yet are added to it and the
// status is written, so that no object exists in the cluster that no inventory
// names, whenever the agent stops. Objects the inventory already names cost
// nothing. On a conflict the entries are added to the newest status instead.
func (r *Reconciler) recordAhead(obj *v1alpha1.Sync) func(context.Context, []v1alpha1.ObjectRef) error {
	return func(ctx context.Context, writes []v1alpha1.ObjectRef) error {
		return r.updateStatus(ctx, obj, func(cur v1alpha1.SyncStatus) (v1alpha1.SyncStatus, bool) {
			return withEntries(cur, writes)
		})
	}
}

// withEntries returns st with refs in its inventory, and whether any was missing.
func withEntries(st v1alpha1.SyncStatus, refs []v1alpha1.ObjectRef) (v1alpha1.SyncStatus, bool) {
	objects := plan.Inventory(st)
	known := make(map[string]bool, len(objects)+len(refs))
	for _, o := range objects {
		known[o.Key()] = true
	}
	added := false
	for _, ref := range refs {
		if !known[ref.Key()] {
			known[ref.Key()] = true
			objects = append(objects, ref)
			added = true
		}
	}
	if !added {
		return st, false
	}
	st = *st.DeepCopy()
	plan.SetInventory(&st, objects)
	return st, true
}

// catchUp reads obj again from the API server when, as the cache holds it, it
// has Tether's finalizer but no inventory, and returns the copy to reconcile.
// Either its status was wiped (rebuildInventory then searches every kind for its
// objects), or the cache has not yet seen the inventory this agent wrote a moment
// ago: a reconcile that a watch event queued while the one before was writing it.
// One read tells the two apart; without it, every Sync of a large first sync
// whose events outran the cache cost a list of every kind. Without a fresh reader
// (Cluster.Fresh) or a Finder nothing is read.
func (r *Reconciler) catchUp(ctx context.Context, obj *v1alpha1.Sync) (*v1alpha1.Sync, error) {
	if r.Cluster.Fresh == nil || !r.mustSearch(obj) {
		return obj, nil
	}
	fresh := &v1alpha1.Sync{}
	if err := r.Cluster.Fresh.Get(ctx, client.ObjectKeyFromObject(obj), fresh); apierrors.IsNotFound(err) {
		return obj, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading the Sync, whose cached copy has no inventory: %w", err)
	}
	return fresh, nil
}

// mustSearch reports whether obj's inventory is to be rebuilt from labels: it is
// empty though obj was reconciled before (it has Tether's finalizer), and no
// search found nothing for it already.
func (r *Reconciler) mustSearch(obj *v1alpha1.Sync) bool {
	if r.Agent.Finder == nil || !controllerutil.ContainsFinalizer(obj, v1alpha1.Finalizer) || len(plan.InventoryDetail(obj.Status)) > 0 {
		return false
	}
	uid, ok := r.state.searched.Load(client.ObjectKeyFromObject(obj))
	return !ok || uid != obj.UID
}

// rebuildInventory finds the objects of a Sync whose inventory is empty though it
// was reconciled before (it has Tether's finalizer: its status was wiped, or restored
// from a backup without status) by their label, before anything is pruned, and adds
// them to it with an Event. A new Sync costs nothing; a Sync without a Finder keeps
// its inventory as it is.
func (r *Reconciler) rebuildInventory(ctx context.Context, obj *v1alpha1.Sync, st *plan.Status) error {
	key := client.ObjectKeyFromObject(obj)
	if len(st.Inventory()) > 0 {
		r.state.searched.Delete(key)
		return nil
	}
	if !r.mustSearch(obj) {
		return nil
	}
	// Found as the Sync's identity: it must not learn of objects its account cannot see.
	id, err := r.identity(ctx, obj)
	if err != nil || id.Finder == nil {
		return err
	}
	opts := plan.FindOptionsFor(obj)
	opts.Namespace = r.tenancyOf(id).searchNamespace(obj, id)
	found, err := id.Finder.FindOwned(ctx, opts)
	if err != nil {
		return fmt.Errorf("rebuilding the inventory from label %s: %w", v1alpha1.SyncLabel, err)
	}
	if len(found) == 0 {
		r.state.searched.Store(key, obj.UID)
		return nil
	}
	st.Adopted(found)
	r.Observers.Recorder.Eventf(obj, corev1.EventTypeNormal, v1alpha1.ReasonInventoryRebuilt,
		"The inventory was empty; rebuilt it from %d objects labelled %s=%s", len(found), v1alpha1.SyncLabel, v1alpha1.SyncLabelValue(obj.Namespace, obj.Name))
	return nil
}

// reportVanishedKinds records an Event for inventory entries dropped because the
// API server no longer serves their kind.
func (r *Reconciler) reportVanishedKinds(obj *v1alpha1.Sync, cs *apply.ChangeSet) {
	if cs == nil {
		return
	}
	var names []string
	for _, c := range cs.Changes {
		if c.Action == apply.ActionSkipped && c.Note == apply.NoteKindGone {
			names = append(names, c.Object.String())
		}
	}
	if len(names) > 0 {
		r.Observers.Recorder.Eventf(obj, corev1.EventTypeWarning, v1alpha1.ReasonKindVanished,
			"Dropped %d objects from the inventory whose kind the API server no longer serves: %s", len(names), strings.Join(names, ", "))
	}
}
