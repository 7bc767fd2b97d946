package plan

import (
	"strings"
	"testing"
	"time"

	"tether.dev/tether/api/v1alpha1"
)

func TestRollbackTarget(t *testing.T) {
	a, b, c := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)
	history := []v1alpha1.HistoryEntry{
		{Revision: "main@sha1:" + c, Health: v1alpha1.HealthDegraded},
		{Revision: "main@sha1:" + b, Health: v1alpha1.HealthProgressing},
		{Revision: "main@sha1:" + a, Health: v1alpha1.HealthHealthy},
	}
	for _, tc := range []struct{ to, want, err string }{
		{"", a, ""},
		{"bbbbbbb", b, ""},
		{"main@sha1:" + b, b, ""},
		{strings.Repeat("d", 40), strings.Repeat("d", 40), ""},
		{"bbb", "", "names no revision"},
		{"HEAD~1", "", "names no revision"},
	} {
		got, err := RollbackTarget(history, tc.to)
		if got != tc.want || (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("RollbackTarget(%q) = %q, %v; want %q, %q", tc.to, got, err, tc.want, tc.err)
		}
	}
	if _, err := RollbackTarget(history[:2], ""); err == nil {
		t.Error("RollbackTarget with no Healthy revision before the current: no error")
	}
}

func TestPinPatchAndEvent(t *testing.T) {
	commit := strings.Repeat("a", 40)
	if got, want := string(PinPatch(commit)), `{"metadata":{"annotations":{"tether.dev/pin-revision":"`+commit+`"}}}`; got != want {
		t.Errorf("PinPatch(commit) = %s, want %s", got, want)
	}
	if got, want := string(PinPatch("")), `{"metadata":{"annotations":{"tether.dev/pin-revision":null}}}`; got != want {
		t.Errorf("PinPatch(\"\") = %s, want %s", got, want)
	}
	s := &v1alpha1.Sync{}
	s.Namespace, s.Name = "tether-system", "web"
	now := time.Date(2026, 11, 27, 18, 0, 0, 0, time.UTC)
	if got, want := PinEvent(s, commit, "alice", "tether ui", now).Message, "alice asked to roll back the Sync to "+commit+", through tether ui"; got != want {
		t.Errorf("PinEvent(commit) says %q, want %q", got, want)
	}
	if got, want := PinEvent(s, "", "", "tether CLI", now).Message, "an unknown user asked to remove the pin of the Sync, through tether CLI"; got != want {
		t.Errorf("PinEvent(\"\") says %q, want %q", got, want)
	}
}
