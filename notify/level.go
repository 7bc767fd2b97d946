package notify

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

// CommitState is the state of a commit status, in Tether's words; each git host's
// payload builder maps it to its own.
type CommitState string

// Commit states.
const (
	CommitPending CommitState = "pending"
	CommitSuccess CommitState = "success"
	CommitFailure CommitState = "failure"
)

// Commit is the commit status a Sync asserts for one commit.
type Commit struct {
	// SHA of the commit.
	SHA string
	// State of the commit in the Sync.
	State CommitState
	// Description says why, in a line: the reason of a failure, or the health.
	Description string
}

// CommitsOf returns the commit statuses a Sync asserts now: the revision it is at
// (the newest fetched) is pending while it applies and rolls out, success once
// Healthy, failure when Degraded or refused; and a revision it rolled back from
// is a failure. A Sync that has fetched nothing yet asserts nothing.
func CommitsOf(s *v1alpha1.Sync) []Commit {
	var out []Commit
	if r := s.Status.Rollback; r != nil && SHAOf(r.FailedRevision) != "" {
		out = append(out, Commit{SHA: SHAOf(r.FailedRevision), State: CommitFailure, Description: "rolled back: " + r.Reason})
	}
	rev := s.Status.SourceRevision
	if s.Status.Rollback != nil {
		rev = s.Status.Rollback.Revision
	}
	if sha := SHAOf(rev); sha != "" {
		state, desc := stateOf(s, rev)
		out = append(out, Commit{SHA: sha, State: state, Description: desc})
	}
	return out
}

func stateOf(s *v1alpha1.Sync, rev string) (CommitState, string) {
	if reason, msg := failing(s); reason != "" {
		return CommitFailure, reason + ": " + firstLine(msg)
	}
	if rev != s.Status.LastAppliedRevision {
		return CommitPending, "applying"
	}
	switch s.Status.Health {
	case v1alpha1.HealthDegraded:
		return CommitFailure, "Degraded: " + firstLine(degradedMessage(s))
	case v1alpha1.HealthHealthy:
		if ready(s) {
			return CommitSuccess, "Healthy"
		}
	}
	return CommitPending, "rolling out"
}

func ready(s *v1alpha1.Sync) bool {
	c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue
}

// Alert is whether a Sync's alert fires, and why.
type Alert struct {
	// Firing is true while the Sync fails or is Degraded.
	Firing bool
	// Reason and Message say why it fires.
	Reason, Message string
}

// AlertOf returns the alert a Sync asserts now.
func AlertOf(s *v1alpha1.Sync) Alert {
	if reason, msg := failing(s); reason != "" {
		return Alert{Firing: true, Reason: reason, Message: firstLine(msg)}
	}
	if s.Status.Health == v1alpha1.HealthDegraded {
		return Alert{Firing: true, Reason: v1alpha1.ReasonDegraded, Message: firstLine(degradedMessage(s))}
	}
	return Alert{}
}

// maxLine bounds a line of a status description.
const maxLine = 140

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			s = s[:i]
			break
		}
	}
	if len(s) > maxLine {
		s = strings.ToValidUTF8(s[:maxLine-3], "") + "…"
	}
	return s
}
