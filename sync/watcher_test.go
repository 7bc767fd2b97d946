package sync

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

func TestWatcherTriggersOnlySyncsOfTheNamespacesItServes(t *testing.T) {
	owned := func(owner string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: "team-a", Name: "web", Annotations: map[string]string{v1alpha1.OwnedByAnnotation: owner},
		}}
	}
	for _, tc := range []struct {
		name       string
		namespaces []string
		owner      string
		want       string
	}{
		{"every namespace", nil, "elsewhere/app", "elsewhere/app"},
		{"a served namespace", []string{"team-a", "team-b"}, "team-b/app", "team-b/app"},
		{"a namespace not served", []string{"team-a", "team-b"}, "elsewhere/app", ""},
		{"no owner", []string{"team-a"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWatcher(nil, WatcherOptions{Namespaces: tc.namespaces})
			w.onDelete(owned(tc.owner))
			got := ""
			select {
			case e := <-w.events:
				got = e.Object.GetNamespace() + "/" + e.Object.GetName()
			default:
			}
			if got != tc.want {
				t.Errorf("triggered %q, want %q", got, tc.want)
			}
		})
	}
}
