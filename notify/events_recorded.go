package notify

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"tether.dev/tether/api/v1alpha1"
)

// Event kinds told by the Kubernetes Events recorded on a Sync rather than by
// its status: what leaves no level behind.
const (
	// EventDriftCorrected: the agent set objects changed in the cluster back to
	// git (selfHeal on); its Event counts what it configured.
	EventDriftCorrected = "DriftCorrected"
	// EventRequested: a person asked for something through Tether's CLI or UI
	// (reconcile, suspend, resume, rollback, a pin); the Event names them.
	EventRequested = "Requested"
)

// EventOfRecord returns the event a Kubernetes Event recorded on Sync s tells
// of, and false for an Event that tells of nothing the status does not say
// already. An Event is told when it happened at or after since (an agent
// starting lists every Event still kept, which were told before), once per
// occurrence: a repeated Event (a count that grew) is told again.
func EventOfRecord(old, ev *corev1.Event, s *v1alpha1.Sync, since time.Time) (Event, bool) {
	if ev == nil || s == nil || ev.InvolvedObject.Kind != "Sync" || ev.InvolvedObject.UID != s.UID {
		return Event{}, false
	}
	var kind string
	switch ev.Reason {
	case v1alpha1.ReasonDriftCorrected:
		kind = EventDriftCorrected
	case v1alpha1.ReasonRequestedByUser:
		kind = EventRequested
	default:
		return Event{}, false
	}
	at := lastSeen(ev)
	if at.Before(since) || (old != nil && old.Count == ev.Count && lastSeen(old).Equal(at)) {
		return Event{}, false
	}
	return Event{
		Namespace: s.Namespace, Sync: s.Name, RepoURL: s.Spec.Source.URL,
		Kind: kind, Severity: v1alpha1.SeverityInfo, Reason: ev.Reason,
		Message:  strings.TrimSpace(ev.Message),
		Revision: revisionOf(ev, s), Time: at,
	}, true
}

// lastSeen is when an Event last happened, in whichever field its recorder set.
func lastSeen(ev *corev1.Event) time.Time {
	switch {
	case ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return ev.Series.LastObservedTime.Time
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}

// revisionOf is the revision an Event names (the agent annotates its own),
// else the one the Sync last applied.
func revisionOf(ev *corev1.Event, s *v1alpha1.Sync) string {
	if rev := ev.Annotations["revision"]; rev != "" {
		return rev
	}
	return s.Status.LastAppliedRevision
}
