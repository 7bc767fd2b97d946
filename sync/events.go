package sync

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
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
// each at V(1) as the manager's does. It sends Events from now until the
// manager stops.
func NewEventRecorder(mgr ctrl.Manager) (record.EventRecorder, error) {
	events, err := typedcorev1.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("creating the Events client: %w", err)
	}
	b := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: EventMemory}))
	log := mgr.GetLogger().WithName("events")
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: events.Events("")})
	b.StartEventWatcher(func(e *corev1.Event) {
		log.V(1).Info(e.Message, "type", e.Type, "object", e.InvolvedObject, "reason", e.Reason)
	})
	if err := mgr.Add(broadcasterStop{b}); err != nil {
		b.Shutdown()
		return nil, err
	}
	return b.NewRecorder(mgr.GetScheme(), corev1.EventSource{Component: "tether"}), nil
}

// broadcasterStop shuts an Event broadcaster down (its queued Events sent) when
// the manager stops, leader or not.
type broadcasterStop struct{ b record.EventBroadcaster }

var _ manager.LeaderElectionRunnable = broadcasterStop{}

func (s broadcasterStop) Start(ctx context.Context) error {
	<-ctx.Done()
	s.b.Shutdown()
	return nil
}

func (broadcasterStop) NeedLeaderElection() bool { return false }
