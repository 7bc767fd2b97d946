package sync

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
)

// CacheTransform trims an object before the manager's cache (its informers) keeps
// it, to what the agent reads of it; pass it as the cache's DefaultTransform. Every
// object loses its managedFields, which nothing reads from the cache (the apply
// reads them from the API server). The metadata the Watcher keeps of managed kinds
// (PartialObjectMetadata) loses more, for there is one per object of every kind a
// Sync applies, in the whole cluster:
//   - the last-applied-configuration annotation of client-side apply, a copy of
//     the whole object;
//   - of objects no Sync owns (no tether.dev/owned-by annotation), everything but
//     their name, namespace, uid, resourceVersion, generation and deletion: the
//     apply asks only whether they exist, and a change of them concerns no Sync.
//     An object that a Sync takes over carries its owned-by annotation in the
//     event that tells of it, whole again.
//
// Typed objects (Syncs) keep their labels and annotations: they may be written
// back, and are read whole.
func CacheTransform(obj any) (any, error) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		trimMetadata(&m.ObjectMeta)
		return m, nil
	}
	if o, err := meta.Accessor(obj); err == nil {
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// trimMetadata trims the metadata of an object the Watcher keeps.
func trimMetadata(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	if _, owned := m.Annotations[v1alpha1.OwnedByAnnotation]; !owned {
		*m = metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
			Generation: m.Generation, DeletionTimestamp: m.DeletionTimestamp,
		}
		return
	}
	delete(m.Annotations, apply.LastAppliedAnnotation)
}
