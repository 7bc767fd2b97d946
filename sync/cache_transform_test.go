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

	t.Run("a managed object keeps its metadata but managedFields and kubectl's last-applied copy", func(t *testing.T) {
		got := transformed(t, metadata(map[string]string{
			v1alpha1.OwnedByAnnotation: "tether-system/web", apply.LastAppliedAnnotation: `{"a":"whole copy"}`, "team": "a",
		}))
		want := metadata(map[string]string{v1alpha1.OwnedByAnnotation: "tether-system/web", "team": "a"})
		want.ManagedFields = nil
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
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
	t.Run("a Sync loses its managedFields only", func(t *testing.T) {
		s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{
			Namespace: "tether-system", Name: "web", ManagedFields: managed,
			Annotations: map[string]string{apply.LastAppliedAnnotation: "{}"}, Labels: map[string]string{v1alpha1.ShardLabel: "a"},
		}}
		want := s.DeepCopy()
		want.ManagedFields = nil
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
