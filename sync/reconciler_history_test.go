package sync_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
)

// pollEverySecond makes a Sync look at git every second.
func pollEverySecond(s *v1alpha1.Sync) {
	s.Spec.Source.Interval = &metav1.Duration{Duration: time.Second}
}

func TestHistoryRecordsEveryAppliedRevision(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "apps")
	commits := []string{repo.Commit(t, map[string]string{"apps/cm.yaml": configMapYAML("web", "one")}, "First greeting")}
	s := a.newSync(t, ns, repo.FileURL(), pollEverySecond)
	a.WaitApplied(t, s, commits[0])
	commits = append(commits, repo.Commit(t, map[string]string{"apps/cm.yaml": configMapYAML("web", "two")}, "Second greeting\n\nwith a body"))
	a.WaitApplied(t, s, commits[1])
	commits = append(commits, repo.Commit(t, map[string]string{"apps/cm.yaml": configMapYAML("web", "three")}, "\x1b[2J\x1b[HThird\u202e greeting"))
	got := a.WaitFor(t, s, "three entries, the newest Healthy", func(s *v1alpha1.Sync) bool {
		h := s.Status.History
		return len(h) == 3 && strings.HasSuffix(h[0].Revision, commits[2]) && h[0].Health == v1alpha1.HealthHealthy
	})

	want := []struct{ commit, message string }{
		{commits[2], "[2J [HThird greeting"},
		{commits[1], "Second greeting"},
		{commits[0], "First greeting"},
	}
	for i, e := range got.Status.History {
		if e.Revision != "main@sha1:"+want[i].commit || e.Message != want[i].message || e.Health != v1alpha1.HealthHealthy || e.AppliedAt.IsZero() {
			t.Errorf("history[%d] = %+v, want main@sha1:%s, Healthy, %q", i, e, want[i].commit, want[i].message)
		}
		if e.Author != gitserver.AuthorName {
			t.Errorf("history[%d] author = %q, want the commit's author's name %q (no email)", i, e.Author, gitserver.AuthorName)
		}
		if e.HealthyAt == nil || e.HealthyAt.Before(&e.AppliedAt) {
			t.Errorf("history[%d] healthyAt = %v, applied at %v: want when it became Healthy, not before it was applied", i, e.HealthyAt, e.AppliedAt)
		}
		if i > 0 && e.AppliedAt.After(got.Status.History[i-1].AppliedAt.Time) {
			t.Errorf("history[%d] applied after history[%d]: want the newest first", i, i-1)
		}
	}
}
