package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEventTableCutsMessagesUnlessWide(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	long := "3 objects failed validation, so nothing of the revision was written: " + strings.Repeat("ConfigMap/web/x: dry-run failed; ", 5) +
		"\nand a second line"
	events := []corev1.Event{{
		InvolvedObject: corev1.ObjectReference{Kind: "Sync", Namespace: "web", Name: "web"},
		Type:           corev1.EventTypeWarning, Reason: "ValidationFailed", Message: long,
		LastTimestamp: metav1.NewTime(now.Add(-time.Minute)),
	}}
	for _, tc := range []struct {
		whole bool
		want  string
	}{
		{false, oneLine(long)},
		{true, strings.Join(strings.Fields(long), " ")},
	} {
		var out bytes.Buffer
		if err := printEventTable(&out, events, "web", tc.whole, now); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
		if len(lines) != 2 || !strings.HasSuffix(lines[1], tc.want) {
			t.Errorf("whole=%t: table\n%s\nwant one row ending with %q", tc.whole, out.String(), tc.want)
		}
	}
	if strings.HasSuffix(oneLine(long), "and a second line") {
		t.Fatal("the message of the test is not long enough to be cut")
	}
}
