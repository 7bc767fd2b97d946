package sync

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

// patchStatus writes the status a reconcile built. On a conflict it merges with the
// newest copy (see updateStatus): inventory entries another writer added since obj
// was read are kept, and everything else is this reconcile's, describing the
// generation it reconciled (a newer spec gets a reconcile of its own). If another
// reconcile has meanwhile reported on a newer generation, this older status is
// dropped rather than written over it.
//
// It returns the health the status it replaced said, so that a change of health is
// told once, by the write that made it; when nothing was written, that is the
// health of status itself.
func (r *Reconciler) patchStatus(ctx context.Context, obj *v1alpha1.Sync, status v1alpha1.SyncStatus) (v1alpha1.HealthStatusCode, error) {
	base, baseRun, baseHooks := obj.Status, obj.Status.Run, obj.Status.Hooks
	before := status.Health
	err := r.updateStatus(ctx, obj, func(cur v1alpha1.SyncStatus) (v1alpha1.SyncStatus, bool) {
		before = status.Health
		if cur.ObservedGeneration > status.ObservedGeneration {
			return cur, false
		}
		next := status
		next.Objects, next.LegacyInventory = plan.MergeInventory(base, status, cur), nil
		next.Run = plan.MergeRun(baseRun, status.Run, cur.Run)
		next.Hooks = plan.MergeHooks(baseHooks, status.Hooks, cur.Hooks)
		before = cur.Health // next.Health is status.Health: the same unless it is written
		return next, true
	})
	return before, err
}

// updateStatus writes the status that next computes from the Sync's current one,
// when it differs, and leaves obj as written. The patch carries obj's
// resourceVersion; on a conflict the Sync is re-read from the API server (a cache
// may still hold the copy that conflicted) and next is asked again, so a concurrent
// writer is never overwritten blindly.
func (r *Reconciler) updateStatus(ctx context.Context, obj *v1alpha1.Sync, next func(cur v1alpha1.SyncStatus) (v1alpha1.SyncStatus, bool)) error {
	reader := r.Cluster.Fresh
	if reader == nil {
		reader = r.Cluster.Syncs
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		status, ok := next(obj.Status)
		if !ok || equality.Semantic.DeepEqual(obj.Status, status) {
			return nil
		}
		base := obj.DeepCopy()
		obj.Status = status
		err := r.Cluster.Syncs.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(StatusFieldManager))
		if !apierrors.IsConflict(err) {
			return err
		}
		fresh := &v1alpha1.Sync{}
		if gerr := reader.Get(ctx, client.ObjectKeyFromObject(obj), fresh); gerr != nil {
			return gerr
		}
		*obj = *fresh
		return err
	})
	return client.IgnoreNotFound(err)
}
