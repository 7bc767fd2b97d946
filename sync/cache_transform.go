package sync

import (
	"hash/fnv"
	"io"
	"maps"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
)

// CacheTransform trims an object before the manager's cache (its informers) keeps
// it, to what the agent reads of it; pass it as the cache's DefaultTransform. Every
// object's managedFields lose their fields (the apply reads those from the API
// server) and keep who wrote, how and when: a Sync's tell when its spec was last
// written (specChangedAt), which bounds the age of the ref listing its reconcile
// may use. The metadata the Watcher keeps of managed kinds
// (PartialObjectMetadata) loses more, for there is one per object of every kind a
// Sync applies, in the whole cluster: everything but its name, namespace, uid,
// resourceVersion, generation and deletion. The apply asks only whether an object
// exists and at which version, and a change of an object no Sync owns (no
// tether.dev/owned-by annotation) concerns no Sync; an object that a Sync takes
// over carries its owned-by annotation in the event that tells of it. An owned
// object keeps its owned-by annotation too, and in place of its other labels and
// annotations a digest of them (MetadataDigestKey), which is all the Watcher
// compares.
//
// Typed objects (Syncs) keep their labels and annotations: they may be written
// back, and are read whole.
func CacheTransform(obj any) (any, error) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		trimMetadata(&m.ObjectMeta)
		return m, nil
	}
	if o, err := meta.Accessor(obj); err == nil {
		o.SetManagedFields(withoutFields(o.GetManagedFields()))
	}
	return obj, nil
}

// withoutFields returns the entries of managed without the fields each manages.
func withoutFields(managed []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	if len(managed) == 0 {
		return nil
	}
	out := make([]metav1.ManagedFieldsEntry, len(managed))
	for i, e := range managed {
		e.FieldsType, e.FieldsV1 = "", nil
		out[i] = e
	}
	return out
}

// trimMetadata trims the metadata of an object the Watcher keeps.
func trimMetadata(m *metav1.ObjectMeta) {
	owner, owned := m.Annotations[v1alpha1.OwnedByAnnotation]
	kept := metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, DeletionTimestamp: m.DeletionTimestamp,
	}
	if owned {
		kept.Annotations = map[string]string{v1alpha1.OwnedByAnnotation: owner, MetadataDigestKey: metadataDigest(m)}
	}
	*m = kept
}

// MetadataDigestKey is the annotation, in the agent's cache only (never written), that stands for the
// labels and annotations of a managed object: the Watcher compares two versions
// of an object by them (a change of either may be drift), and needs nothing else
// of them. Keeping them whole cost a fleet of 10,000 objects two maps and their
// strings each.
const MetadataDigestKey = "tether.dev/cached-metadata-digest"

// metadataDigest sums m's labels and annotations (kubectl's last-applied copy
// aside, which changes with nothing the Watcher follows).
func metadataDigest(m *metav1.ObjectMeta) string {
	h := fnv.New64a()
	write := func(tag string, kv map[string]string) {
		keys := slices.Sorted(maps.Keys(kv))
		for _, k := range keys {
			if k == apply.LastAppliedAnnotation {
				continue
			}
			// Lengths first, so that no two sets of strings sum alike.
			for _, part := range []string{tag, strconv.Itoa(len(k)), ":", k, strconv.Itoa(len(kv[k])), ":", kv[k]} {
				_, _ = io.WriteString(h, part)
			}
		}
	}
	write("l", m.Labels)
	write("a", m.Annotations)
	return strconv.FormatUint(h.Sum64(), 16)
}
