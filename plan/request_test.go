package plan

import (
	"testing"
	"time"

	"tether.dev/tether/api/v1alpha1"
)

func TestRequestReconcileSetsTheAnnotationToTheTime(t *testing.T) {
	s := &v1alpha1.Sync{}
	now := time.Date(2026, 11, 27, 16, 0, 0, 5, time.UTC)
	token := RequestReconcile(s, now)
	if token != "2026-11-27T16:00:00.000000005Z" || s.Annotations[v1alpha1.ReconcileRequestedAnnotation] != token {
		t.Errorf("token %q, annotations %v", token, s.Annotations)
	}
}

func TestSetSuspend(t *testing.T) {
	now := time.Date(2026, 11, 27, 16, 0, 0, 0, time.UTC)
	s := &v1alpha1.Sync{}
	if SetSuspend(s, false, now) {
		t.Error("resuming a Sync that is not suspended changed it")
	}
	if !SetSuspend(s, true, now) || !s.Spec.Suspend {
		t.Error("suspend did not set spec.suspend")
	}
	if _, requested := s.Annotations[v1alpha1.ReconcileRequestedAnnotation]; requested {
		t.Error("suspending requested a reconcile")
	}
	if !SetSuspend(s, false, now) || s.Spec.Suspend {
		t.Error("resume did not clear spec.suspend")
	}
	if _, requested := s.Annotations[v1alpha1.ReconcileRequestedAnnotation]; !requested {
		t.Error("resuming did not request a reconcile")
	}
}
