package sync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
)

// deletionPoll is how often a Sync being deleted looks again at objects it deleted
// that are still terminating.
const deletionPoll = 2 * time.Second

// ensureFinalizer puts tether.dev/finalizer on the Sync before anything is applied,
// so that deleting the Sync always gets the chance to prune or orphan.
func (r *Reconciler) ensureFinalizer(ctx context.Context, obj *v1alpha1.Sync) error {
	if controllerutil.ContainsFinalizer(obj, v1alpha1.Finalizer) {
		return nil
	}
	base := obj.DeepCopy()
	controllerutil.AddFinalizer(obj, v1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(StatusFieldManager)); err != nil {
		return fmt.Errorf("adding finalizer to Sync %s/%s: %w", obj.Namespace, obj.Name, err)
	}
	return nil
}

// finalize runs while a Sync is being deleted: with deletionPolicy Delete it prunes
// every object of the inventory (in the order Prune uses, with its protections),
// with Orphan it releases them; once none is left it removes the finalizer. It is
// level-triggered like everything else: each pass works on what is still there,
// and status says what deletion waits for.
func (r *Reconciler) finalize(ctx context.Context, obj *v1alpha1.Sync, st *statusBuilder) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, v1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	id, err := r.identity(ctx, obj)
	if err != nil {
		return r.deletionWaits(st, err)
	}
	var refs []apply.ObjectRef
	for _, o := range st.inventory() {
		refs = append(refs, refOf(o))
	}
	opts := apply.PruneOptions{Owner: ownerOf(obj), FieldManager: r.Apply.FieldManager, Concurrency: r.Apply.Concurrency}
	var cs *apply.ChangeSet
	if obj.Spec.EffectiveDeletionPolicy() == v1alpha1.DeletionPolicyOrphan {
		cs, err = id.Applier.Orphan(ctx, refs, opts)
	} else {
		cs, err = id.Applier.Prune(ctx, refs, opts)
		r.Metrics.CountChanges(obj, cs)
		r.reportVanishedKinds(obj, cs)
	}
	st.pruned(cs, true)
	if len(st.inventory()) > 0 {
		return r.deletionWaits(st, err)
	}
	r.Recorder.Eventf(obj, corev1.EventTypeNormal, v1alpha1.ReasonFinalized, "Deletion policy %s: every object applied by this Sync was handled", obj.Spec.EffectiveDeletionPolicy())
	base := obj.DeepCopy()
	controllerutil.RemoveFinalizer(obj, v1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(StatusFieldManager)); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	st.skipReport = true // the Sync is gone, or about to be
	return ctrl.Result{}, nil
}

// deletionWaits reports what keeps a Sync from going: objects still terminating, or
// objects that could not be deleted.
func (r *Reconciler) deletionWaits(st *statusBuilder, err error) (ctrl.Result, error) {
	names := make([]string, 0, len(st.objects))
	for _, res := range st.objects {
		names = append(names, refOf(res).String())
	}
	if err != nil {
		st.set(v1alpha1.ReadyCondition, metav1.ConditionFalse, v1alpha1.ReasonDeletionBlocked, "Deletion is blocked: "+err.Error())
		st.set(v1alpha1.ReconcilingCondition, metav1.ConditionTrue, v1alpha1.ReasonDeletionBlocked, "Retrying with backoff")
		return ctrl.Result{}, errors.Join(errors.New("deletion blocked"), err)
	}
	st.set(v1alpha1.ReadyCondition, metav1.ConditionFalse, v1alpha1.ReasonDeleting,
		fmt.Sprintf("Waiting for %d objects to be deleted: %s", len(names), strings.Join(names, ", ")))
	st.set(v1alpha1.ReconcilingCondition, metav1.ConditionTrue, v1alpha1.ReasonDeleting, "Deleting the objects of this Sync")
	return ctrl.Result{RequeueAfter: deletionPoll}, nil
}
