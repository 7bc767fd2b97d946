package sync

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// When the agent stops, the Events of the reconciles still under way are sent:
// the recorder's broadcaster is shut down only once they have returned.
func TestTheEventsOfAReconcileUnderWayAtStopAreSent(t *testing.T) {
	cfg := controlplane.Shared(t).Config()
	ns := controlplane.NewNamespace(t, cfg)
	scheme := runtime.NewScheme()
	harness.Must(t, clientgoscheme.AddToScheme(scheme))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	harness.Must(t, err)
	recorder, broadcaster, err := NewEventRecorder(mgr)
	harness.Must(t, err)
	var running atomic.Int64
	running.Add(1) // a reconcile under way
	stop := eventsStop{broadcaster: broadcaster, running: &running}
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan error, 1)
	go func() { stopped <- stop.Start(ctx) }()
	cancel() // the manager stops

	select {
	case err := <-stopped:
		t.Fatalf("the broadcaster was shut down while a reconcile was under way (%v)", err)
	case <-time.After(100 * time.Millisecond): // the reconcile goes on a little
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", UID: "uid-web"}}
	recorder.Event(cm, corev1.EventTypeNormal, "Applied", "Applied revision main@sha1:aaaa")
	running.Add(-1) // the reconcile returns
	harness.Must(t, <-stopped)

	c, err := client.New(cfg, client.Options{Scheme: scheme})
	harness.Must(t, err)
	harness.Eventually(t, time.Minute, "the Event of the reconcile under way", func(ctx context.Context) (bool, error) {
		var list corev1.EventList
		err := c.List(ctx, &list, client.InNamespace(ns))
		return err == nil && len(list.Items) == 1, err
	})
}
