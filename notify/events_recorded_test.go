package notify

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

func TestEventOfRecord(t *testing.T) {
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", UID: "u1"}}
	s.Status.LastAppliedRevision = "main@sha1:abc"
	ev := func(reason string, at time.Time, count int32) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Annotations: map[string]string{"revision": "main@sha1:def"}},
			InvolvedObject: corev1.ObjectReference{Kind: "Sync", Namespace: "team", Name: "web", UID: "u1"},
			Reason:         reason, Message: "said", LastTimestamp: metav1.NewTime(at), Count: count,
		}
	}
	other := ev(v1alpha1.ReasonDriftCorrected, start, 1)
	other.InvolvedObject.UID = "u0"
	for _, tc := range []struct {
		name     string
		old, cur *corev1.Event
		want     string
	}{
		{"drift corrected", nil, ev(v1alpha1.ReasonDriftCorrected, start.Add(time.Second), 1), EventDriftCorrected},
		{"a person's action", nil, ev(v1alpha1.ReasonRequestedByUser, start, 1), EventRequested},
		{"recorded before the agent started: told by the one before", nil, ev(v1alpha1.ReasonDriftCorrected, start.Add(-time.Second), 1), ""},
		{"an Event the status tells of already", nil, ev(v1alpha1.ReasonApplied, start.Add(time.Second), 1), ""},
		{"the same Event again", ev(v1alpha1.ReasonDriftCorrected, start.Add(time.Second), 2), ev(v1alpha1.ReasonDriftCorrected, start.Add(time.Second), 2), ""},
		{"a repeated Event", ev(v1alpha1.ReasonDriftCorrected, start.Add(time.Second), 2), ev(v1alpha1.ReasonDriftCorrected, start.Add(5*time.Second), 3), EventDriftCorrected},
		{"an Event of a Sync of the same name before it", nil, other, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := EventOfRecord(tc.old, tc.cur, s, start)
			if got := map[bool]string{true: e.Kind}[ok]; got != tc.want {
				t.Fatalf("kind %q; want %q", got, tc.want)
			}
			if ok && (e.Revision != "main@sha1:def" || e.Sync != "web" || e.Message != "said") {
				t.Errorf("event %+v", e)
			}
		})
	}
}
