package sync_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tethersync "tether.dev/tether/sync"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// A fleet's Events must not stay in the agent's memory: the recorder folds an
// Event recorded again into a count while it is among the last EventMemory
// Events, and forgets it after that.
func TestTheEventRecorderRemembersOnlyTheLatestEvents(t *testing.T) {
	cfg := controlplane.Shared(t).Config()
	cfg.QPS, cfg.Burst = 500, 1000
	ns := controlplane.NewNamespace(t, cfg)
	scheme := runtime.NewScheme()
	harness.Must(t, clientgoscheme.AddToScheme(scheme))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	harness.Must(t, err)
	recorder, broadcaster, err := tethersync.NewEventRecorder(mgr)
	harness.Must(t, err)
	t.Cleanup(broadcaster.Shutdown)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	harness.Must(t, err)

	object := func(i int) *corev1.ConfigMap {
		name := fmt.Sprintf("app-%03d", i)
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}}
	}
	// eventsOf waits until the Events of object 0 count want in all, and
	// returns them.
	eventsOf := func(t *testing.T, want int32) []corev1.Event {
		t.Helper()
		var list corev1.EventList
		harness.Eventually(t, waitTimeout, fmt.Sprintf("the Events of app-000 to count %d", want), func(ctx context.Context) (bool, error) {
			if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingFieldsSelector{
				Selector: fields.OneTermEqualSelector("involvedObject.name", "app-000"),
			}); err != nil {
				return false, err
			}
			var n int32
			for _, e := range list.Items {
				n += e.Count
			}
			return n == want, nil
		})
		return list.Items
	}

	t.Run("an Event recorded again at once is counted", func(t *testing.T) {
		recorder.Event(object(0), corev1.EventTypeNormal, "Applied", "Applied revision main@sha1:aaaa")
		recorder.Event(object(0), corev1.EventTypeNormal, "Applied", "Applied revision main@sha1:aaaa")
		if events := eventsOf(t, 2); len(events) != 1 {
			t.Fatalf("%d Events, want the two folded into one with count 2: %+v", len(events), events)
		}
	})
	t.Run("an Event recorded again after EventMemory others is a new Event", func(t *testing.T) {
		for i := 1; i <= tethersync.EventMemory; i++ {
			recorder.Event(object(i), corev1.EventTypeNormal, "Applied", "Applied revision main@sha1:aaaa")
		}
		recorder.Event(object(0), corev1.EventTypeNormal, "Applied", "Applied revision main@sha1:aaaa")
		// Remembered, it would have counted 3 on the first Event.
		if events := eventsOf(t, 3); len(events) != 2 {
			t.Fatalf("%d Events, want the first (count 2) and a new one: the recorder remembers more than %d Events: %+v",
				len(events), tethersync.EventMemory, events)
		}
	})
}
