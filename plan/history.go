package plan

import (
	"fmt"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

// History records in status.history that rev is applied in full, with the health
// this reconcile judged: a new entry, newest first, when rev is not the newest
// entry (subject and author are its commit's, made safe by the caller), else
// the newest entry's health brought up to date. An entry that reached Healthy
// stays Healthy: the history says what each revision reached, and a later
// failure of the cluster is not the revision's. The time it first became
// Healthy is kept (healthyAt), once. At most v1alpha1.MaxHistory entries are kept.
func (b *Status) History(rev, subject, author string) {
	h := b.status.History
	if len(h) > 0 && h[0].Revision == rev {
		if h[0].Health != v1alpha1.HealthHealthy {
			h[0].Health = b.status.Health
			b.markHealthy(&h[0])
		}
		return
	}
	entry := v1alpha1.HistoryEntry{Revision: rev, AppliedAt: metav1.NewTime(b.now()), Health: b.status.Health, Message: subject, Author: author}
	b.markHealthy(&entry)
	h = append([]v1alpha1.HistoryEntry{entry}, h...)
	if len(h) > v1alpha1.MaxHistory {
		h = h[:v1alpha1.MaxHistory]
	}
	b.status.History = h
}

// markHealthy records now as when e became Healthy, if it just did.
func (b *Status) markHealthy(e *v1alpha1.HistoryEntry) {
	if e.Health == v1alpha1.HealthHealthy && e.HealthyAt == nil {
		at := metav1.NewTime(b.now())
		e.HealthyAt = &at
	}
}

// HealthyAfter says how long a revision took to become Healthy after it was
// applied, to the second ("42s", "3m10s"), as `tether history` and the UI show
// it; "" when it is not known: the entry never became Healthy, or did before
// the agent recorded when.
func HealthyAfter(e v1alpha1.HistoryEntry) string {
	if e.HealthyAt == nil {
		return ""
	}
	return max(e.HealthyAt.Sub(e.AppliedAt.Time), 0).Round(time.Second).String()
}

// NeedsHistoryEntry reports whether History(rev, …) would add an entry, so that
// the caller reads the commit's subject only then.
func (b *Status) NeedsHistoryEntry(rev string) bool {
	return len(b.status.History) == 0 || b.status.History[0].Revision != rev
}

// CommitOf is the commit hash of a revision as status writes it
// ("main@sha1:<hash>" or "sha1:<hash>"), "" when it names none.
func CommitOf(rev string) string {
	if i := strings.LastIndex(rev, "sha1:"); i >= 0 {
		return rev[i+len("sha1:"):]
	}
	return ""
}

// LastHealthy returns the newest entry of history after the first (the
// revision applied now) that reached Healthy and is another commit than the
// first: where a rollback goes.
func LastHealthy(history []v1alpha1.HistoryEntry) (v1alpha1.HistoryEntry, bool) {
	if len(history) == 0 {
		return v1alpha1.HistoryEntry{}, false
	}
	current := CommitOf(history[0].Revision)
	for _, e := range history[1:] {
		if e.Health == v1alpha1.HealthHealthy && CommitOf(e.Revision) != current {
			return e, true
		}
	}
	return v1alpha1.HistoryEntry{}, false
}

// IsFullCommit reports whether s is a full SHA-1 commit hash, as
// tether.dev/pin-revision must be.
func IsFullCommit(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Pinned records that the Sync applies rev, the commit its pin annotation names,
// while its ref is at head (fetched for reporting only).
func (b *Status) Pinned(rev, head string) {
	b.set(v1alpha1.PinnedCondition, metav1.ConditionTrue, v1alpha1.ReasonPinned, fmt.Sprintf(
		"Pinned to %s by the annotation %s; the ref is at %s, applied once the annotation is removed (tether rollback --undo)",
		rev, v1alpha1.PinRevisionAnnotation, head))
}

// Unpinned records that the Sync follows its ref.
func (b *Status) Unpinned() { b.remove(v1alpha1.PinnedCondition) }

// Rollback is an automatic rollback decided: the revision that failed, why, and
// the earlier revision to apply in its place.
type Rollback struct {
	Failed v1alpha1.HistoryEntry
	To     v1alpha1.HistoryEntry
	// Reason is v1alpha1.ReasonDegraded or v1alpha1.ReasonHealthTimeout.
	Reason string
	// Why says what failed, for the condition and the Event.
	Why string
}

// Message says what the rollback did, for the RolledBack condition and its Event.
func (r Rollback) Message() string {
	return fmt.Sprintf("Revision %s failed (%s); rolled back to %s, the last Healthy revision. %s is applied again only once the ref moves on or a reconcile is requested",
		r.Failed.Revision, r.Why, r.To.Revision, CommitOf(r.Failed.Revision))
}

// CheckRollback decides, after a revision was applied in full and its health
// judged (History recorded), whether spec's rollback is due: the newest entry
// never reached Healthy, and is Degraded now or older than spec's healthTimeout,
// and an earlier revision reached Healthy. When none is due yet but may be, it
// returns how long until the timeout passes, for the caller to look again then.
// The caller does not ask for a revision that is itself a rollback or a pin.
func (b *Status) CheckRollback(spec *v1alpha1.RollbackSpec) (*Rollback, time.Duration) {
	h := b.status.History
	// Suspended objects (a paused Deployment) are as someone wants them: no failure.
	if spec == nil || !spec.OnFailure || len(h) == 0 || h[0].Health == v1alpha1.HealthHealthy || b.status.Health == v1alpha1.HealthSuspended {
		return nil, 0
	}
	cur := h[0]
	timeout := spec.HealthTimeoutOrDefault()
	age := b.now().Sub(cur.AppliedAt.Time)
	var rb Rollback
	switch {
	case b.status.Health == v1alpha1.HealthDegraded:
		rb = Rollback{Reason: v1alpha1.ReasonDegraded, Why: "Degraded: " + b.healthMessage()}
	case age >= timeout:
		rb = Rollback{Reason: v1alpha1.ReasonHealthTimeout, Why: fmt.Sprintf("not Healthy within %s, %s: %s", timeout, b.status.Health, b.healthMessage())}
	default:
		return nil, timeout - age
	}
	to, ok := LastHealthy(h)
	if !ok {
		return nil, 0
	}
	rb.Failed, rb.To = cur, to
	return &rb, 0
}

// healthMessage is the Healthy condition's message, bounded.
func (b *Status) healthMessage() string {
	c := apimeta.FindStatusCondition(b.status.Conditions, v1alpha1.HealthyCondition)
	if c == nil {
		return ""
	}
	const maxWhy = 512
	if len(c.Message) > maxWhy {
		return c.Message[:maxWhy] + "..."
	}
	return c.Message
}

// RolledBack records an automatic rollback: status.rollback and the RolledBack
// condition, kept until RollbackCleared.
func (b *Status) RolledBack(rb Rollback) {
	b.status.Rollback = &v1alpha1.RollbackStatus{
		FailedRevision: rb.Failed.Revision, Revision: rb.To.Revision, Reason: rb.Reason, At: metav1.NewTime(b.now()),
	}
	b.set(v1alpha1.RolledBackCondition, metav1.ConditionTrue, rb.Reason, rb.Message())
}

// KeepRollback records rb (a rollback decided earlier) as still in force.
func (b *Status) KeepRollback(rb v1alpha1.RollbackStatus) {
	if b.status.Rollback == nil {
		b.status.Rollback = &rb
	}
	if apimeta.FindStatusCondition(b.status.Conditions, v1alpha1.RolledBackCondition) == nil {
		b.set(v1alpha1.RolledBackCondition, metav1.ConditionTrue, rb.Reason, fmt.Sprintf(
			"Revision %s failed (%s); rolled back to %s", rb.FailedRevision, rb.Reason, rb.Revision))
	}
}

// RollbackCleared records that the Sync follows its ref again after a rollback.
func (b *Status) RollbackCleared() {
	b.status.Rollback = nil
	b.remove(v1alpha1.RolledBackCondition)
}
