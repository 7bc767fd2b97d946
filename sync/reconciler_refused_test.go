package sync

import (
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/source"
)

// TestARefusedRevisionIsTriedAgainAfterABackoff: the dry-run of objects the
// API server refused whole is tried again after the interval, then twice it,
// four times, up to five minutes; other objects, a new generation, a person's
// request, or another failure try at once.
func TestARefusedRevisionIsTriedAgainAfterABackoff(t *testing.T) {
	ref := v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "bad"}
	invalid := &apply.ValidationError{Errs: []*apply.ObjectError{{Object: ref, Op: "dry-run",
		Err: apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "bad", nil)}}}
	unknownKind := &apply.ValidationError{Errs: []*apply.ObjectError{{Object: ref, Op: "dry-run",
		Err: &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "example.com", Kind: "Widget"}}}}}
	snapOf := func(v string) *source.Snapshot {
		return &source.Snapshot{Path: "app", Objects: []*unstructured.Unstructured{{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "bad"}, "data": map[string]any{"v": v}}}}}
	}
	sync := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "app", Generation: 1}}
	sync.Status.Conditions = []metav1.Condition{{Type: v1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonValidationFailed}}
	key := client.ObjectKeyFromObject(sync)
	const interval = time.Minute
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

	var m refusedRevisions
	digest := digestIfRefused(sync, snapOf("1"))
	if digest == nil {
		t.Fatal("no digest taken for a Sync Stalled at validation")
	}
	if m.waits(sync, digest, t0) {
		t.Fatal("the first apply waits")
	}
	now := t0
	for i, want := range []time.Duration{interval, 2 * interval, 4 * interval, 5 * time.Minute, 5 * time.Minute} {
		m.record(key, digest, invalid, interval, now)
		if !m.waits(sync, digest, now.Add(want-time.Second)) {
			t.Errorf("refusal %d: the apply does not wait %s", i+1, want)
		}
		if m.waits(sync, digest, now.Add(want)) {
			t.Errorf("refusal %d: the apply waits past %s", i+1, want)
		}
		now = now.Add(want)
	}

	m.record(key, digest, invalid, interval, now)
	soon := now.Add(time.Second)
	if m.waits(sync, digestIfRefused(sync, snapOf("2")), soon) {
		t.Error("other objects wait")
	}
	next := sync.DeepCopy()
	next.Generation = 2
	if m.waits(next, digestIfRefused(next, snapOf("1")), soon) {
		t.Error("a new generation of the Sync waits")
	}
	requested := sync.DeepCopy()
	requested.Annotations = map[string]string{v1alpha1.ReconcileRequestedAnnotation: "now"}
	if m.waits(requested, digest, soon) {
		t.Error("a person's request waits")
	}
	ready := sync.DeepCopy()
	ready.Status.Conditions = nil
	if digestIfRefused(ready, snapOf("1")) != nil {
		t.Error("a digest is taken for a Sync that is not Stalled at validation")
	}

	for name, err := range map[string]error{"an unknown kind": unknownKind, "a timeout": errors.New("timeout"), "success": nil} {
		m.record(key, digest, invalid, interval, now)
		m.record(key, digest, err, interval, now)
		if m.waits(sync, digest, soon) {
			t.Errorf("after %s the apply waits", name)
		}
	}
}
