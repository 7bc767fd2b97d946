package syncset

import (
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"tether.dev/tether/api/v1alpha1"
)

// specChanged passes a SyncSet's creation, deletion and spec changes; its own
// status writes do not queue it again.
func specChanged() predicate.Predicate {
	return predicate.GenerationChangedPredicate{}
}

// memberChanged passes the changes of a Sync that its SyncSet acts on: its
// spec, labels or annotations (a hand edit to revert, a pin), its revision,
// readiness and health (a rollout's next step, the Ready count), and its going.
func memberChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return true },
		DeleteFunc: func(event.DeleteEvent) bool { return true },
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, okOld := e.ObjectOld.(*v1alpha1.Sync)
			cur, okNew := e.ObjectNew.(*v1alpha1.Sync)
			if !okOld || !okNew {
				return true
			}
			return old.Generation != cur.Generation ||
				!equality.Semantic.DeepEqual(old.Labels, cur.Labels) ||
				!equality.Semantic.DeepEqual(old.Annotations, cur.Annotations) ||
				old.Status.LastAppliedRevision != cur.Status.LastAppliedRevision ||
				old.Status.Health != cur.Status.Health ||
				old.Status.ObservedGeneration != cur.Status.ObservedGeneration ||
				readyOf(old) != readyOf(cur) ||
				!cur.DeletionTimestamp.IsZero()
		},
		GenericFunc: func(event.GenericEvent) bool { return true },
	}
}

func readyOf(s *v1alpha1.Sync) metav1.ConditionStatus {
	if c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition); c != nil {
		return c.Status
	}
	return metav1.ConditionUnknown
}
