package sync_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	tethersync "tether.dev/tether/sync"
)

func TestCacheTransformKeepsWhatTheAgentReads(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "tether", Operation: metav1.ManagedFieldsOperationApply}}
	deleted := metav1.Now()
	metadata := func(annotations map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: "web", Name: "api", UID: "u1", ResourceVersion: "7", Generation: 3, DeletionTimestamp: &deleted,
			Labels: map[string]string{v1alpha1.SyncLabel: "tether-system.web"}, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{Kind: "Thing", Name: "x"}}, Finalizers: []string{"f"},
			ManagedFields: managed,
		}}
	}
	transformed := func(t *testing.T, obj any) any {
		t.Helper()
		out, err := tethersync.CacheTransform(obj)
		if err != nil {
			t.Fatalf("CacheTransform: %v", err)
		}
		return out
	}

	t.Run("a managed object keeps whose it is and a digest of its labels and annotations", func(t *testing.T) {
		got := transformed(t, metadata(map[string]string{
			v1alpha1.OwnedByAnnotation: "tether-system/web", apply.LastAppliedAnnotation: `{"a":"whole copy"}`, "team": "a",
		})).(*metav1.PartialObjectMetadata)
		digest := got.Annotations[tethersync.MetadataDigestKey]
		want := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: "web", Name: "api", UID: "u1", ResourceVersion: "7", Generation: 3, DeletionTimestamp: &deleted,
			Annotations: map[string]string{v1alpha1.OwnedByAnnotation: "tether-system/web", tethersync.MetadataDigestKey: digest},
		}}
		if diff := cmp.Diff(want, got); diff != "" || digest == "" {
			t.Errorf("digest %q, (-want +got):\n%s", digest, diff)
		}
	})
	t.Run("the digest changes with any label or annotation but kubectl's last-applied copy", func(t *testing.T) {
		digest := func(labels, annotations map[string]string) string {
			m := metadata(annotations)
			m.Labels = labels
			return transformed(t, m).(*metav1.PartialObjectMetadata).Annotations[tethersync.MetadataDigestKey]
		}
		owned := func(kv ...string) map[string]string {
			out := map[string]string{v1alpha1.OwnedByAnnotation: "tether-system/web"}
			for i := 0; i+1 < len(kv); i += 2 {
				out[kv[i]] = kv[i+1]
			}
			return out
		}
		base := digest(map[string]string{"app": "web"}, owned("team", "a"))
		for name, other := range map[string]string{
			"a label's value":              digest(map[string]string{"app": "api"}, owned("team", "a")),
			"a label more":                 digest(map[string]string{"app": "web", "tier": "1"}, owned("team", "a")),
			"an annotation's value":        digest(map[string]string{"app": "web"}, owned("team", "b")),
			"a label become an annotation": digest(nil, owned("team", "a", "app", "web")),
			"strings split elsewhere":      digest(map[string]string{"ap": "pweb"}, owned("team", "a")),
		} {
			if other == base {
				t.Errorf("%s: the digest did not change", name)
			}
		}
		if again := digest(map[string]string{"app": "web"}, owned("team", "a", apply.LastAppliedAnnotation, "{}")); again != base {
			t.Errorf("kubectl's last-applied copy changed the digest: %s, was %s", again, base)
		}
	})
	t.Run("an object no Sync owns keeps only what says it exists and which version it is", func(t *testing.T) {
		got := transformed(t, metadata(map[string]string{apply.LastAppliedAnnotation: "{}"}))
		want := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: "web", Name: "api", UID: "u1", ResourceVersion: "7", Generation: 3, DeletionTimestamp: &deleted,
		}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("a Sync loses the fields of its managedFields only", func(t *testing.T) {
		written := metav1.Now()
		s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{
			Namespace: "tether-system", Name: "web",
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Time: &written,
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)},
			}},
			Annotations: map[string]string{apply.LastAppliedAnnotation: "{}"}, Labels: map[string]string{v1alpha1.ShardLabel: "a"},
		}}
		want := s.DeepCopy()
		want.ManagedFields[0].FieldsType, want.ManagedFields[0].FieldsV1 = "", nil
		if diff := cmp.Diff(want, transformed(t, s)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("anything else passes through", func(t *testing.T) {
		if got := transformed(t, "tombstone"); got != "tombstone" {
			t.Errorf("got %v", got)
		}
	})
}
