package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

func TestGetTable(t *testing.T) {
	s := treeFixture()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	s.CreationTimestamp = metav1.NewTime(now.Add(-90 * time.Minute))
	s.Generation = 2
	s.Spec.Suspend = true
	s.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionFalse, ObservedGeneration: 2, Reason: "Progressing", Message: "Waiting\nfor it"}}
	var out bytes.Buffer
	if err := printSyncTable(&out, []v1alpha1.Sync{*s}, true, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := [][]string{
		{"NAMESPACE", "NAME", "REVISION", "SYNC", "HEALTH", "READY", "SUSPENDED", "PINNED", "AGE", "MESSAGE"},
		{"tether-system", "web", "main@4f2c1a2", "Synced", "Degraded", "False", "true", "-", "90m", "Waiting", "…"},
	}
	var got [][]string
	for _, l := range lines {
		got = append(got, strings.Fields(l))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("table (-want +got):\n%s\n%s", diff, out.String())
	}
}
