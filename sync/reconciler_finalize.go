package sync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/plan"
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
	if err := r.Cluster.Syncs.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(StatusFieldManager)); err != nil {
		return fmt.Errorf("adding finalizer to Sync %s/%s: %w", obj.Namespace, obj.Name, err)
	}
	return nil
}

// finalize runs while a Sync is being deleted: with deletionPolicy Delete it prunes
// every object of the inventory (in the order Prune uses, with its protections),
// with Orphan it releases them; once none is left it removes the finalizer. It is
// level-triggered like everything else: each pass works on what is still there,
// and status says what deletion waits for.
func (r *Reconciler) finalize(ctx context.Context, obj *v1alpha1.Sync, st *plan.Status) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, v1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	id, err := r.identity(ctx, obj)
	if err != nil {
		if r.accountGoneWithNamespace(ctx, obj, err) {
			return r.leaveBehind(ctx, obj, st, nil, err)
		}
		return r.deletionWaits(st, err)
	}
	if err := r.deleteHooksOf(ctx, id, obj, st); err != nil {
		return r.deletionWaits(st, err)
	}
	var refs []v1alpha1.ObjectRef
	for _, o := range st.Inventory() {
		refs = append(refs, o.ObjectRef)
	}
	opts := apply.PruneOptions{Owner: plan.Owner(obj), FieldManager: r.Agent.ApplyOptions.FieldManager, Concurrency: r.Agent.ApplyOptions.Concurrency}
	var cs *apply.ChangeSet
	if obj.Spec.EffectiveDeletionPolicy() == v1alpha1.DeletionPolicyOrphan {
		cs, err = id.Applier.Orphan(ctx, refs, opts)
	} else {
		cs, err = id.Applier.Prune(ctx, refs, opts)
		r.Observers.Metrics.CountChanges(obj, cs)
		r.reportVanishedKinds(obj, cs)
	}
	st.Deleting(cs)
	if len(st.Inventory()) > 0 {
		if err != nil && r.accountGoneWithNamespace(ctx, obj, err) {
			return r.leaveBehind(ctx, obj, st, cs, err)
		}
		return r.deletionWaits(st, err)
	}
	r.Observers.Recorder.Eventf(obj, corev1.EventTypeNormal, v1alpha1.ReasonFinalized, "Deletion policy %s: every object applied by this Sync was handled", obj.Spec.EffectiveDeletionPolicy())
	return r.removeFinalizer(ctx, obj, st)
}

// removeFinalizer lets the Sync go.
func (r *Reconciler) removeFinalizer(ctx context.Context, obj *v1alpha1.Sync, st *plan.Status) (ctrl.Result, error) {
	base := obj.DeepCopy()
	controllerutil.RemoveFinalizer(obj, v1alpha1.Finalizer)
	if err := r.Cluster.Syncs.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(StatusFieldManager)); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	st.Gone() // the Sync is gone, or about to be
	return ctrl.Result{}, nil
}

// accountGoneWithNamespace reports whether a Sync being deleted can no longer act
// because its namespace is being deleted with it: err says that the account it
// acts as is gone or has lost its rights, and its namespace is terminating (or
// gone). A namespace's deletion removes the account and its RoleBindings in no
// order Tether can count on, and nobody could act as the account again: waiting
// would hold the namespace in Terminating for good. Anything else (an account
// deleted by mistake, rights withdrawn in a namespace that stays) keeps the Sync
// waiting, so that a person can mend it.
func (r *Reconciler) accountGoneWithNamespace(ctx context.Context, obj *v1alpha1.Sync, err error) bool {
	if r.Agent.Tenancy.accountOf(obj) == "" && !obj.Spec.Destination.IsRemote() || !accountCannotAct(err) {
		return false
	}
	reader := r.Cluster.Fresh
	if reader == nil {
		return false // Cluster.Syncs would cache and watch every namespace
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	switch err := reader.Get(ctx, client.ObjectKey{Name: obj.Namespace}, ns); {
	case apierrors.IsNotFound(err):
		return true
	case err != nil:
		ctrl.LoggerFrom(ctx).Error(err, "reading the namespace of a Sync being deleted")
		return false
	}
	return ns.DeletionTimestamp != nil
}

// accountCannotAct reports whether err says that the account a Sync acts as does
// not exist or may not do what deletion needs: every object error is an
// authorization denial (or an authentication failure), or the account is missing.
func accountCannotAct(err error) bool {
	var refused *RefusedError
	if errors.As(err, &refused) {
		// (A remote cluster's kubeconfig Secret goes with the namespace too.)
		return refused.Reason == v1alpha1.ReasonServiceAccountNotFound || refused.Reason == v1alpha1.ReasonKubeConfigNotFound
	}
	oes := apply.ObjectErrors(err)
	if len(oes) == 0 {
		return isUnauthorized(err) || apierrors.IsUnauthorized(err)
	}
	for _, oe := range oes {
		if !isUnauthorized(oe.Err) && !apierrors.IsUnauthorized(oe.Err) {
			return false
		}
	}
	return true
}

// leaveBehind removes the finalizer of a Sync whose account went with its
// namespace, leaving what it could not delete in place: the agent never deletes
// with rights of its own what the account could not. The objects inside the
// namespace go with it; those elsewhere (other namespaces, cluster-scoped) that the
// last pass (cs, nil when none ran) did not delete stay, and a Warning Event names
// them.
func (r *Reconciler) leaveBehind(ctx context.Context, obj *v1alpha1.Sync, st *plan.Status, cs *apply.ChangeSet, cause error) (ctrl.Result, error) {
	deleted := map[string]bool{}
	if cs != nil {
		for _, c := range cs.Changes {
			if c.Action == apply.ActionPruned {
				deleted[c.Object.Key()] = true
			}
		}
	}
	// In another cluster, nothing goes with the hub's namespace: every object
	// not deleted is left.
	remote := obj.Spec.Destination.IsRemote()
	var elsewhere []string
	for _, o := range st.Inventory() {
		if (remote || o.Namespace != obj.Namespace) && !deleted[o.Key()] {
			elsewhere = append(elsewhere, o.String())
		}
	}
	account := "the Sync"
	if name := r.Agent.Tenancy.accountOf(obj); name != "" {
		account = ServiceAccountUser(obj.Namespace, name)
	}
	msg := fmt.Sprintf("Namespace %s is being deleted and %s can no longer act (%v); ", obj.Namespace, account, cause)
	switch {
	case remote && len(elsewhere) > 0:
		msg += fmt.Sprintf("left in place in cluster %s, not deleted: %d objects: %s", obj.Spec.Destination.ClusterName(), len(elsewhere), strings.Join(elsewhere, ", "))
	case len(elsewhere) == 0:
		msg += "nothing outside the namespace was left"
	default:
		msg += fmt.Sprintf("left in place, not deleted: %d objects outside the namespace: %s", len(elsewhere), strings.Join(elsewhere, ", "))
	}
	ctrl.LoggerFrom(ctx).Info("Releasing a Sync whose account went with its namespace", "account", account, "leftBehind", elsewhere)
	r.recordOutliving(obj, corev1.EventTypeWarning, v1alpha1.ReasonObjectsLeftBehind, msg)
	return r.removeFinalizer(ctx, obj, st)
}

// recordOutliving records an Event about a Sync whose namespace is being deleted
// where it outlives the namespace: on Observers.Home, in the agent's own
// namespace, naming the Sync. (The API server refuses new Events in a
// terminating namespace.) Without a Home it is recorded on the Sync, and may be
// refused; the log keeps it.
func (r *Reconciler) recordOutliving(obj *v1alpha1.Sync, eventType, reason, msg string) {
	if r.Observers.Home == nil {
		r.Observers.Recorder.Event(obj, eventType, reason, msg)
		return
	}
	r.Observers.Recorder.Eventf(r.Observers.Home, eventType, reason, "Sync %s/%s: %s", obj.Namespace, obj.Name, msg)
}

// deletionWaits reports what keeps a Sync from going: objects still terminating, or
// objects that could not be deleted.
func (r *Reconciler) deletionWaits(st *plan.Status, err error) (ctrl.Result, error) {
	if err != nil {
		st.DeletionBlocked(err)
		return ctrl.Result{}, errors.Join(errors.New("deletion blocked"), err)
	}
	st.WaitingForDeletion()
	return ctrl.Result{RequeueAfter: deletionPoll}, nil
}
