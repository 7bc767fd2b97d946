package sync

import (
	"context"
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

// checkDependencies holds a Sync back until every Sync it names in
// spec.dependsOn is Ready at its current revision (plan.CheckDependencies),
// reading them from the manager's cache. A dependency's change queues the Sync
// again (dependents), so that it waits on the watch, not on a poll.
func (r *Reconciler) checkDependencies(ctx context.Context, obj *v1alpha1.Sync) error {
	if len(obj.Spec.DependsOn) == 0 {
		return nil
	}
	var lookupErr error
	err := plan.CheckDependencies(obj, func(n types.NamespacedName) (*v1alpha1.Sync, bool) {
		dep := &v1alpha1.Sync{}
		if err := r.Cluster.Syncs.Get(ctx, n, dep); err != nil {
			if client.IgnoreNotFound(err) != nil && lookupErr == nil {
				lookupErr = fmt.Errorf("reading Sync %s, a dependency: %w", n, err)
			}
			return nil, false
		}
		return dep, true
	})
	if lookupErr != nil {
		// A dependency the agent cannot read (a namespace it does not watch)
		// does not become readable by retrying hot: it is waited on at the
		// interval, and said so.
		return &plan.WaitingError{Reason: v1alpha1.ReasonDependencyNotReady, Msg: "waiting for dependencies: " + lookupErr.Error()}
	}
	return err
}

// dependsOnIndex indexes the manager's cache of Syncs by the Syncs each names in
// spec.dependsOn ("namespace/name"), so that dependents reads the few Syncs that
// wait for one, not every Sync: in a fleet's first sync every Sync's readiness
// changes, and listing the whole fleet at each change costs the agent time and
// memory that grow with the square of the fleet.
const dependsOnIndex = "tether.dev/depends-on"

// indexDependencies registers dependsOnIndex with the manager's cache; call it
// before the cache starts.
func indexDependencies(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &v1alpha1.Sync{}, dependsOnIndex, func(o client.Object) []string {
		s, ok := o.(*v1alpha1.Sync)
		if !ok {
			return nil
		}
		deps := plan.DependenciesOf(s)
		out := make([]string, len(deps))
		for i, d := range deps {
			out[i] = d.String()
		}
		return out
	})
}

// dependents maps a Sync to the Syncs that name it in spec.dependsOn, from the
// manager's cache (dependsOnIndex): they are queued when its readiness changes.
func (r *Reconciler) dependents(ctx context.Context, o client.Object) []reconcile.Request {
	dep := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
	var list v1alpha1.SyncList
	if err := r.Cluster.Syncs.List(ctx, &list, client.MatchingFields{dependsOnIndex: dep.String()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Syncs to queue the dependents of one")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if plan.DependsOn(&list.Items[i], dep) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}})
		}
	}
	return out
}

// readinessChanged passes the changes of a Sync that may change what its
// dependents wait for: its creation and deletion, its Ready condition, the
// revision it applied or fetched, its generation and its dependencies.
func readinessChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*v1alpha1.Sync)
			n, ok2 := e.ObjectNew.(*v1alpha1.Sync)
			if !ok1 || !ok2 {
				return false
			}
			return o.Generation != n.Generation ||
				o.Status.LastAppliedRevision != n.Status.LastAppliedRevision ||
				o.Status.SourceRevision != n.Status.SourceRevision ||
				readyOf(o) != readyOf(n)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// readyOf is a Sync's Ready condition as its dependents read it.
func readyOf(s *v1alpha1.Sync) string {
	c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
	if c == nil {
		return ""
	}
	return fmt.Sprintf("%s/%d", c.Status, c.ObservedGeneration)
}
