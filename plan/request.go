package plan

import (
	"time"

	"tether.dev/tether/api/v1alpha1"
)

// What a person asks of a Sync (tether reconcile, suspend, resume, and the web
// UI's buttons), as the change to make to it; the caller patches it with its own
// rights.

// RequestReconcile sets the reconcile-request annotation of s to a new value (now),
// and returns it: the agent answers by copying it into
// status.lastHandledReconcileAt.
func RequestReconcile(s *v1alpha1.Sync, now time.Time) string {
	token := now.UTC().Format(time.RFC3339Nano)
	annotations := s.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[v1alpha1.ReconcileRequestedAnnotation] = token
	s.SetAnnotations(annotations)
	return token
}

// SetSuspend sets spec.suspend of s, and reports whether that changed it.
// Resuming also requests a reconcile, so that the agent looks at git at once
// rather than answering from a listing made before the Sync was suspended.
func SetSuspend(s *v1alpha1.Sync, suspend bool, now time.Time) bool {
	if s.Spec.Suspend == suspend {
		return false
	}
	s.Spec.Suspend = suspend
	if !suspend {
		RequestReconcile(s, now)
	}
	return true
}
