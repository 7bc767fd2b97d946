package sync_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
)

// TestASilentGitHostDoesNotStallItsNeighbours runs ten Syncs on a git host that
// accepts connections and never answers beside one Sync on a healthy host, on an
// agent with the default four workers, and checks that the healthy Sync still
// applies each push within two of its intervals.
func TestASilentGitHostDoesNotStallItsNeighbours(t *testing.T) {
	if testing.Short() {
		t.Skip("pushes several commits at a few seconds' interval")
	}
	const interval = 3 * time.Second
	const pushes = 3
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "healthy")
	first := repo.Commit(t, apps(1), "one app")
	healthy := a.newSync(t, ns, repo.URL(), func(s *v1alpha1.Sync) {
		s.Name = "healthy"
		s.Spec.Source.Interval = &metav1.Duration{Duration: interval}
	})
	removeWhenDone(t, a, healthy)
	a.WaitApplied(t, healthy, first)

	pushAndWait := func(t *testing.T, n int) time.Duration {
		var slowest time.Duration
		for i := range n {
			commit := repo.Commit(t, map[string]string{"apps/app-0000.yaml": app("app-0000", fmt.Sprintf("push %s %d", t.Name(), i))}, "a push")
			pushed := time.Now()
			a.WaitFor(t, healthy, "applied "+commit, func(s *v1alpha1.Sync) bool { return strings.HasSuffix(s.Status.LastAppliedRevision, commit) })
			took := time.Since(pushed)
			t.Logf("push %d applied %s after it was pushed", i+1, took.Round(10*time.Millisecond))
			slowest = max(slowest, took)
		}
		return slowest
	}

	t.Run("alone, the healthy Sync applies each push within two intervals", func(t *testing.T) {
		if slowest := pushAndWait(t, pushes); slowest > 2*interval {
			t.Errorf("a push took %s to apply; want at most two intervals (%s)", slowest, 2*interval)
		}
	})

	silent := gitserver.StartSilent(t)
	hostile := make([]*v1alpha1.Sync, 10)
	for i := range hostile {
		hostile[i] = a.newSync(t, ns, fmt.Sprintf("http://%s/repo-%d.git", silent, i), func(s *v1alpha1.Sync) {
			s.Name = fmt.Sprintf("silent-%d", i)
			s.Spec.Source.Interval = &metav1.Duration{Duration: time.Second}
		})
	}
	removeWhenDone(t, a, hostile...)

	t.Run("beside ten Syncs on a silent host, it still applies each push within two intervals", func(t *testing.T) {
		if slowest := pushAndWait(t, pushes); slowest > 2*interval {
			t.Errorf("a push took %s to apply beside a silent host; want at most two intervals (%s)", slowest, 2*interval)
		}
	})

}
