package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

func TestEventsOfASyncAndItsNamespacedObjects(t *testing.T) {
	s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: "tether-system", Name: "web"}}
	s.Status.Inventory = []string{"_web__Namespace_v1", "web_api_apps_Deployment_v1"}
	scope := EventsOf(s)
	if diff := cmp.Diff([]string{"tether-system", "web"}, scope.Namespaces()); diff != "" {
		t.Errorf("namespaces (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		kind, ns, name string
		want           bool
	}{
		{"Sync", "tether-system", "web", true},
		{"Deployment", "web", "api", true},
		{"Sync", "tether-system", "other", false},
		{"Deployment", "other", "api", false},
		{"Pod", "web", "api", false},
	} {
		ev := &corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: tc.kind, Namespace: tc.ns, Name: tc.name}}
		if got := scope.Has(ev); got != tc.want {
			t.Errorf("Has(%s/%s/%s) = %v, want %v", tc.kind, tc.ns, tc.name, got, tc.want)
		}
	}
}
