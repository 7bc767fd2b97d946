package plan

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

func TestActionEventNamesTheUserTheActionAndTheTool(t *testing.T) {
	s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps", UID: "u-1"}}
	now := time.Date(2026, 11, 27, 17, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ user, want string }{
		{"alice", "alice asked to suspend the Sync, through tether ui"},
		{"", "an unknown user asked to suspend the Sync, through tether ui"},
	} {
		e := ActionEvent(s, "suspend", tc.user, "tether ui", now)
		if e.Message != tc.want || e.Reason != v1alpha1.ReasonRequestedByUser || e.Type != corev1.EventTypeNormal {
			t.Errorf("user %q: %s %s %q; want Normal RequestedByUser %q", tc.user, e.Type, e.Reason, e.Message, tc.want)
		}
		ref := e.InvolvedObject
		if ref.Kind != "Sync" || ref.Name != "web" || ref.Namespace != "apps" || ref.UID != "u-1" || e.Namespace != "apps" {
			t.Errorf("the Event is about %+v in %s; want Sync apps/web", ref, e.Namespace)
		}
		if !e.LastTimestamp.Time.Equal(now) || e.Count != 1 {
			t.Errorf("time %s count %d; want %s and 1", e.LastTimestamp, e.Count, now)
		}
	}
}
