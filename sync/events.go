package sync

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
)

// EventMemory is how many Events the agent's Event recorder remembers, to fold
// an Event recorded again into a count and to hold back an object that records
// too many. client-go remembers 4,096 by default, in three caches that keep each
// Event's message: at two Events per new Sync, a fleet of 1,000 Syncs kept about
// 5 MB of messages it never sent again. Tether records an Event when something
// changes (a revision applied, a new failure, a health transition), rarely the
// same one twice, so the Events of the last few hundred Syncs to record one are
// enough to fold a repeat; an Event recorded again after that is a new Event
// rather than a count, which costs the API server the same one request.
const EventMemory = 256

// NewEventRecorder returns the recorder of the Sync's Events, as the manager's
// own recorder would be but remembering at most EventMemory Events, and logging
// each at V(1) as the manager's does; and its broadcaster, which sends them from
// now on until it is shut down (the caller's to do).
func NewEventRecorder(mgr ctrl.Manager) (record.EventRecorder, record.EventBroadcaster, error) {
	events, err := typedcorev1.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, nil, fmt.Errorf("creating the Events client: %w", err)
	}
	b := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: EventMemory}))
	log := mgr.GetLogger().WithName("events")
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: events.Events("")})
	b.StartEventWatcher(func(e *corev1.Event) {
		log.V(1).Info(e.Message, "type", e.Type, "object", e.InvolvedObject, "reason", e.Reason)
	})
	return b.NewRecorder(mgr.GetScheme(), corev1.EventSource{Component: "tether"}), b, nil
}

// eventsStop shuts down the broadcaster of the recorder NewReconciler made, once
// the manager stops the Sync controller and the reconciles it was running have
// returned, so that their Events are sent, not refused. It runs beside the
// controller (it needs the leader's election too); an agent never elected
// recorded nothing, and its broadcaster ends with the process.
type eventsStop struct {
	broadcaster record.EventBroadcaster
	// running counts the reconciles under way (Reconciler.state.running).
	running *atomic.Int64
}

func (s eventsStop) Start(ctx context.Context) error {
	<-ctx.Done()
	// The controller stops taking work now; what it runs finishes within its
	// status write's grace.
	idle := func(context.Context) (bool, error) { return s.running.Load() == 0, nil }
	_ = wait.PollUntilContextTimeout(context.WithoutCancel(ctx), 10*time.Millisecond, statusWriteGrace, true, idle)
	s.broadcaster.Shutdown()
	return nil
}
