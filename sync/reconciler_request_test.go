package sync

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestRequestsForAReconcileForceOneListingPerRepositoryPerMinimumInterval(t *testing.T) {
	const minInterval = 10 * time.Second
	const url = "https://git.example.com/org/deploy.git"
	start := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)
	web, api := types.NamespacedName{Namespace: "a", Name: "web"}, types.NamespacedName{Namespace: "b", Name: "api"}
	s := &requestSpacing{}
	type answer struct {
		force        bool
		maxAge, wait time.Duration
	}
	ask := func(key types.NamespacedName, value string, at time.Duration) answer {
		force, maxAge, wait := s.admit(key, url, value, start.Add(at), minInterval)
		return answer{force, maxAge, wait}
	}
	steps := []struct {
		name  string
		key   types.NamespacedName
		value string
		at    time.Duration
		want  answer
	}{
		{"the first request forces a listing", web, "1", 0, answer{force: true}},
		{"a new request a second later waits for the interval", web, "2", time.Second, answer{wait: 9 * time.Second}},
		{"another Sync of the repository waits too", api, "x", 2 * time.Second, answer{wait: 8 * time.Second}},
		{"a request rewritten in a loop keeps waiting", web, "3", 5 * time.Second, answer{wait: 5 * time.Second}},
		{"once the interval is over, the request forces a listing", web, "3", 10 * time.Second, answer{force: true}},
		{"the other Sync's request, seen before that listing, is answered by it", api, "x", 11 * time.Second, answer{maxAge: time.Second + time.Millisecond}},
		{"the same request reconciled again is answered by the same listing", web, "3", 12 * time.Second, answer{maxAge: 2*time.Second + time.Millisecond}},
		{"a request after the interval forces again", web, "4", 25 * time.Second, answer{force: true}},
	}
	for _, step := range steps {
		if got := ask(step.key, step.value, step.at); got != step.want {
			t.Errorf("%s: admit = %+v, want %+v", step.name, got, step.want)
		}
	}
	t.Run("over a minute of requests every 100ms, six listings are forced", func(t *testing.T) {
		s := &requestSpacing{}
		forced := 0
		for i := range 600 {
			at := time.Duration(i) * 100 * time.Millisecond
			if force, _, _ := s.admit(web, url, time.Duration(i).String(), start.Add(at), minInterval); force {
				forced++
			}
		}
		if forced != 6 {
			t.Errorf("%d listings forced in a minute, want 6 (one per %s)", forced, minInterval)
		}
	})
}
