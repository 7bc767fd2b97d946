package plan

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

func TestEventsOfASyncAndItsNamespacedObjects(t *testing.T) {
	s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: "tether-system", Name: "web"}}
	s.Status.Objects = []v1alpha1.InventoryGroup{
		{Version: "v1", Kind: "Namespace", Names: []string{"web"}},
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Names: []string{"api"}},
	}
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

func TestEventTimeIsTheLastTheReporterSet(t *testing.T) {
	created := metav1.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	last := metav1.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC)
	series := metav1.NewMicroTime(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	e := &corev1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: created}}
	if got := EventTime(e); !got.Equal(created.Time) {
		t.Errorf("an Event with no times: %v, want its creation", got)
	}
	e.LastTimestamp = last
	if got := EventTime(e); !got.Equal(last.Time) {
		t.Errorf("with lastTimestamp: %v, want it", got)
	}
	e.Series = &corev1.EventSeries{LastObservedTime: series}
	if got := EventTime(e); !got.Equal(series.Time) {
		t.Errorf("with a series: %v, want its last observed time", got)
	}
}
