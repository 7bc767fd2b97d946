package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"tether.dev/tether/api/v1alpha1"
)

// RollbackTarget is the commit a rollback pins a Sync to: the one to names in
// its history (a revision, a commit, or a prefix of seven or more characters of
// one), or a full commit hash; when to is "", the last Healthy revision before
// the current (LastHealthy). `tether rollback` and the UI's rollback both ask it.
func RollbackTarget(history []v1alpha1.HistoryEntry, to string) (string, error) {
	if to == "" {
		e, ok := LastHealthy(history)
		if !ok {
			return "", errors.New("no earlier revision of its history was Healthy; name one with --to (see tether history)")
		}
		return CommitOf(e.Revision), nil
	}
	want := to
	if c := CommitOf(to); c != "" {
		want = c
	}
	if len(want) >= 7 {
		for _, e := range history {
			if c := CommitOf(e.Revision); strings.HasPrefix(c, want) {
				return c, nil
			}
		}
	}
	if IsFullCommit(want) {
		return want, nil
	}
	return "", fmt.Errorf("%q names no revision of its history and is no full commit hash (see tether history)", to)
}

// PinPatch is the JSON merge patch of a Sync that pins it to commit (its
// v1alpha1.PinRevisionAnnotation), or removes the pin for "".
func PinPatch(commit string) []byte {
	var value any
	if commit != "" {
		value = commit
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{v1alpha1.PinRevisionAnnotation: value}}}) // maps of strings: cannot fail
	return patch
}

// PinEvent is the ActionEvent that records that user pinned Sync s to commit
// (a rollback), or removed its pin for "", through tool.
func PinEvent(s *v1alpha1.Sync, commit, user, tool string, now time.Time) *corev1.Event {
	if commit == "" {
		return ActionEvent(s, "remove the pin of", user, tool, now)
	}
	e := ActionEvent(s, "roll back", user, tool, now)
	e.Message = strings.Replace(e.Message, " the Sync,", " the Sync to "+commit+",", 1)
	return e
}
