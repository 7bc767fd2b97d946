package notify

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

// Event kinds: what happened to a Sync that is worth telling people.
const (
	EventApplied       = "Applied"
	EventHealthy       = "Healthy"
	EventDegraded      = "Degraded"
	EventFailed        = "Failed"
	EventDriftDetected = "DriftDetected"
	EventRolledBack    = "RolledBack"
	EventSuspended     = "Suspended"
	EventResumed       = "Resumed"
	EventTest          = "Test"
)

// Event is one thing a Sync did, ready to be put into words by a payload builder.
type Event struct {
	// Namespace and Sync name the Sync.
	Namespace, Sync string
	// Kind is one of the Event* constants.
	Kind string
	// Severity is info or error; a Notifier of severity error hears only errors.
	Severity v1alpha1.Severity
	// Reason is the Sync's condition reason behind the event, when there is one.
	Reason string
	// Message says what happened in words: the object or file that failed, the
	// objects applied, who suspended.
	Message string
	// Revision is the revision concerned, "<ref>@sha1:<hash>".
	Revision string
	// Subject is the commit's subject, when the Sync's history records it.
	Subject string
	// RepoURL is the Sync's repository, for a link to the revision.
	RepoURL string
	// Time is when the event was observed.
	Time time.Time
}

// Title is the event's one-line summary: "team-a/web: Applied main@sha1:4f2c1a9".
func (e Event) Title() string {
	t := e.Namespace + "/" + e.Sync + ": " + e.Kind
	if e.Revision != "" {
		t += " " + plan.ShortRevision(e.Revision)
	}
	return t
}

// EventsOf returns the events that the change of a Sync from old to cur tells
// of, in the order they happened. old nil (a Sync first seen, or every Sync
// after a restart) tells of nothing: an event is an edge, and a restart must not
// repeat what was said before it. Levels (commit statuses, alerts) are asserted
// again instead (LevelsOf).
func EventsOf(old, cur *v1alpha1.Sync, now time.Time) []Event {
	if old == nil || cur == nil {
		return nil
	}
	base := Event{Namespace: cur.Namespace, Sync: cur.Name, RepoURL: cur.Spec.Source.URL, Time: now}
	var out []Event
	add := func(kind string, sev v1alpha1.Severity, reason, rev, msg string) {
		e := base
		e.Kind, e.Severity, e.Reason, e.Revision, e.Message = kind, sev, reason, rev, msg
		e.Subject = subjectOf(cur, rev)
		out = append(out, e)
	}
	if ev, ok := suspendEvent(old, cur); ok {
		add(ev, v1alpha1.SeverityInfo, "", "", byWhom(cur))
	}
	if reason, msg := failing(cur); reason != "" {
		if oreason, omsg := failing(old); oreason != reason || omsg != msg || old.Status.SourceRevision != cur.Status.SourceRevision {
			add(EventFailed, v1alpha1.SeverityError, reason, cur.Status.SourceRevision, msg)
		}
	}
	if r := cur.Status.Rollback; r != nil && (old.Status.Rollback == nil || *old.Status.Rollback != *r) {
		add(EventRolledBack, v1alpha1.SeverityError, r.Reason, r.Revision,
			fmt.Sprintf("%s failed (%s); rolled back to %s", plan.ShortRevision(r.FailedRevision), r.Reason, plan.ShortRevision(r.Revision)))
	}
	if rev := cur.Status.LastAppliedRevision; rev != "" && rev != old.Status.LastAppliedRevision {
		add(EventApplied, v1alpha1.SeverityInfo, v1alpha1.ReasonApplied, rev, appliedMessage(old, cur))
	}
	if cur.Status.Health != old.Status.Health {
		switch cur.Status.Health {
		case v1alpha1.HealthHealthy:
			add(EventHealthy, v1alpha1.SeverityInfo, v1alpha1.ReasonHealthy, cur.Status.LastAppliedRevision, "every object is healthy")
		case v1alpha1.HealthDegraded:
			add(EventDegraded, v1alpha1.SeverityError, v1alpha1.ReasonDegraded, cur.Status.LastAppliedRevision, degradedMessage(cur))
		}
	}
	if drifted(cur) && !drifted(old) {
		add(EventDriftDetected, v1alpha1.SeverityInfo, "", cur.Status.LastAppliedRevision,
			"the cluster differs from git and selfHeal is off: "+outOfSyncObjects(cur))
	}
	return out
}

// failing is plan.Failing (what the CLI and the UI call failing) less the reasons
// that are not failures (a dependency not ready yet, a retry after a transient
// error).
func failing(s *v1alpha1.Sync) (reason, message string) {
	reason, message = plan.Failing(s)
	if m, ok := v1alpha1.MeaningOf(reason); ok && !m.Failure {
		return "", ""
	}
	return reason, message
}

func suspendEvent(old, cur *v1alpha1.Sync) (string, bool) {
	switch {
	case cur.Spec.Suspend && !old.Spec.Suspend:
		return EventSuspended, true
	case !cur.Spec.Suspend && old.Spec.Suspend:
		return EventResumed, true
	}
	return "", false
}

// byWhom names who last wrote the Sync's spec, from its managedFields (the
// field manager: kubectl, tether's CLI, the UI acting as its user).
func byWhom(s *v1alpha1.Sync) string {
	var who string
	var at time.Time
	for _, m := range s.ManagedFields {
		if m.Subresource != "" || m.Time == nil {
			continue
		}
		if t := m.Time.Time; !t.Before(at) {
			who, at = m.Manager, t
		}
	}
	if who == "" {
		return ""
	}
	return "by " + who
}

func drifted(s *v1alpha1.Sync) bool {
	return !s.Spec.SelfHealEnabled() && s.Status.Sync == v1alpha1.SyncStatusOutOfSync
}

// subjectOf finds the commit subject of rev in the Sync's history.
func subjectOf(s *v1alpha1.Sync, rev string) string {
	for _, h := range s.Status.History {
		if h.Revision == rev {
			return h.Message
		}
	}
	return ""
}

func appliedMessage(old, cur *v1alpha1.Sync) string {
	var total, before int32
	if cur.Status.Summary != nil {
		total = cur.Status.Summary.Total
	}
	if old.Status.Summary != nil {
		before = old.Status.Summary.Total
	}
	msg := fmt.Sprintf("%d objects", total)
	if before > total {
		msg += fmt.Sprintf(", %d pruned", before-total)
	}
	return msg
}

// maxNamed bounds how many objects a message names.
const maxNamed = 5

func degradedMessage(s *v1alpha1.Sync) string {
	var parts []string
	for _, r := range s.Status.Resources {
		if r.Health != v1alpha1.HealthDegraded {
			continue
		}
		if len(parts) == maxNamed {
			parts = append(parts, "…")
			break
		}
		p := r.ObjectRef.String()
		if r.Message != "" {
			p += ": " + r.Message
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		if c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.HealthyCondition); c != nil {
			return c.Message
		}
	}
	return strings.Join(parts, "; ")
}

func outOfSyncObjects(s *v1alpha1.Sync) string {
	var parts []string
	for _, r := range s.Status.Resources {
		if r.Sync != v1alpha1.SyncStatusOutOfSync {
			continue
		}
		if len(parts) == maxNamed {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, r.ObjectRef.String())
	}
	return strings.Join(parts, ", ")
}

// SHAOf returns the commit hash of a revision "<ref>@sha1:<hash>" (or a bare hash).
func SHAOf(rev string) string {
	_, sha := splitRevision(rev)
	return sha
}

func splitRevision(rev string) (ref, sha string) {
	if i := strings.LastIndex(rev, "@"); i >= 0 {
		ref, rev = rev[:i], rev[i+1:]
	}
	if i := strings.Index(rev, ":"); i >= 0 {
		rev = rev[i+1:]
	}
	return ref, rev
}
