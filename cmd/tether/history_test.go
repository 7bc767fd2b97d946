package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

func TestHistoryTable(t *testing.T) {
	now := time.Date(2026, 11, 25, 4, 0, 0, 0, time.UTC)
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	s := &v1alpha1.Sync{}
	s.Name = "web"
	s.Annotations = map[string]string{v1alpha1.PinRevisionAnnotation: a}
	s.Status.SourceRevision = "main@sha1:" + b
	healthyAt := metav1.NewTime(now.Add(-time.Minute + 42*time.Second))
	s.Status.History = []v1alpha1.HistoryEntry{
		{Revision: "main@sha1:" + a, AppliedAt: metav1.NewTime(now.Add(-time.Minute)), HealthyAt: &healthyAt, Health: v1alpha1.HealthHealthy, Message: "Good again", Author: "Ada"},
		// A status anyone may write: a message with a terminal escape.
		{Revision: "main@sha1:" + b, AppliedAt: metav1.NewTime(now.Add(-time.Hour)), Health: v1alpha1.HealthDegraded, Message: "Bad\x1b]0;owned\x07 one\nsecond line"},
	}
	var out bytes.Buffer
	if err := printHistory(&out, s, now); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.ContainsAny(got, "\x1b\x07") {
		t.Errorf("the table passes a terminal escape through:\n%q", got)
	}
	lines := strings.Split(strings.TrimSpace(got), "\n")
	want := [][]string{
		{"REVISION", "APPLIED", "HEALTH", "HEALTHY", "AFTER", "AUTHOR", "MESSAGE"},
		{"*", "pinned", "main@aaaaaaa", "60s", "ago", "Healthy", "42s", "Ada", "Good", "again"},
		{"main@bbbbbbb", "60m", "ago", "Degraded", "-", "-", "Bad", "]0;owned", "one", "second", "line"},
	}
	for i, w := range want {
		if f := strings.Fields(lines[i]); strings.Join(f, " ") != strings.Join(w, " ") {
			t.Errorf("line %d = %v, want %v", i, f, w)
		}
	}
	if !strings.Contains(got, "Pinned to "+a) || !strings.Contains(got, "git is at main@bbbbbbb") {
		t.Errorf("the table does not say the pin and where git is:\n%s", got)
	}
}

// TestHistoryMarksThePinnedAndRolledBackRows: after a rollback to an older
// revision that a newer one followed, the row of the pinned commit and of the
// revision rolled back to say so, not only the footer.
func TestHistoryMarksThePinnedAndRolledBackRows(t *testing.T) {
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	s := &v1alpha1.Sync{}
	s.Annotations = map[string]string{v1alpha1.PinRevisionAnnotation: a}
	s.Status.Rollback = &v1alpha1.RollbackStatus{Revision: "main@sha1:" + a, FailedRevision: "main@sha1:" + b}
	s.Status.History = []v1alpha1.HistoryEntry{{Revision: "main@sha1:" + b}, {Revision: "main@sha1:" + a}, {Revision: "main@sha1:" + a}}
	got := historyMarks(s)
	if want := []string{"*", "pinned rolled-back-to", ""}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("marks %q, want %q", got, want)
	}
}
