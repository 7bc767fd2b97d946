package ui

import (
	"fmt"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

// fleetOf is n Syncs over ten namespaces: every third OutOfSync, every fifth
// suspended, every seventh Stalled.
func fleetOf(n int) []v1alpha1.Sync {
	syncs := make([]v1alpha1.Sync, n)
	for i := range syncs {
		s := &syncs[i]
		s.Namespace, s.Name, s.Generation = fmt.Sprintf("team-%d", i%10), fmt.Sprintf("app-%04d", i), 1
		s.Status = readyStatus(fmt.Sprintf("main@sha1:%040x", i), fmt.Sprintf("Release %d of the app", i))
		if i%3 == 0 {
			s.Status.Sync = v1alpha1.SyncStatusOutOfSync
		}
		s.Spec.Suspend = i%5 == 0
		s.Labels = map[string]string{"tier": []string{"web", "db"}[i%2]}
		if i%7 == 0 {
			s.Status.Conditions = append(s.Status.Conditions, metav1.Condition{Type: v1alpha1.StalledCondition, Status: metav1.ConditionTrue,
				Reason: v1alpha1.ReasonRenderFailed, Message: "kustomization.yaml: broken", ObservedGeneration: 1})
		}
	}
	return syncs
}

func TestFleetPageFiltersAndCounts(t *testing.T) {
	syncs := fleetOf(30)
	page := fleetPageOf(syncs, fleetFilter{})
	want := []count{{"Syncs", 30}, {"OutOfSync", 10}, {"NotReady", 0}, {"Failing", 5}, {"Degraded", 0}, {"Progressing", 0}, {"Suspended", 6}}
	if diff := cmp.Diff(want, page.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if len(page.Rows) != 30 || len(page.Namespaces) != 10 || page.Rows[0].Key != "team-0/app-0000" {
		t.Errorf("unfiltered: %d rows, namespaces %v, first %q", len(page.Rows), page.Namespaces, page.Rows[0].Key)
	}
	filtered := fleetPageOf(syncs, fleetFilter{namespace: "team-0", status: "Failing"})
	var keys []string
	for _, r := range filtered.Rows {
		keys = append(keys, r.Key)
	}
	if diff := cmp.Diff([]string{"team-0/app-0000"}, keys); diff != "" {
		t.Errorf("team-0 and Failing (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, filtered.Counts); diff != "" {
		t.Errorf("the counts are of every Sync, whatever the filter (-want +got):\n%s", diff)
	}
	if got := len(fleetPageOf(syncs, fleetFilter{status: "no-such-status"}).Rows); got != 30 {
		t.Errorf("an unknown status filter kept %d rows, want all 30", got)
	}
	if got := fleetPageOf(syncs, fleetFilter{label: "tier=db", status: "Suspended"}).Rows; len(got) != 3 || got[0].Key != "team-5/app-0005" {
		t.Errorf("tier=db and Suspended: %+v, want app-0005, -0015 and -0025", got)
	}
	if page := fleetPageOf(syncs, fleetFilter{label: "tier in (db"}); page.LabelError == "" || len(page.Rows) != 30 {
		t.Errorf("a broken selector: error %q, %d rows; want the error and every row", page.LabelError, len(page.Rows))
	}
}

// BenchmarkFleetPageOf1000Syncs renders the fleet page of 1,000 Syncs from
// memory, as the page is rendered from the shared watch's cache: the issue asks
// for it within a second.
func BenchmarkFleetPageOf1000Syncs(b *testing.B) {
	p, err := parsePages()
	if err != nil {
		b.Fatal(err)
	}
	syncs := fleetOf(1000)
	for b.Loop() {
		if err := p.byName["fleet"].ExecuteTemplate(io.Discard, "layout", fleetPageOf(syncs, fleetFilter{})); err != nil {
			b.Fatal(err)
		}
	}
}
