package sync_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	tethersync "tether.dev/tether/sync"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

var hookSecret = []byte("generic-hook-secret")

// startReceiver serves the webhook receiver of trigger, with hookSecret for the
// GitHub and generic receivers.
func startReceiver(t testing.TB, trigger *tethersync.Trigger) string {
	t.Helper()
	opts := source.DefaultWebhookOptions()
	opts.Secret = func(r string) []byte {
		if r == source.ReceiverGeneric || r == source.ReceiverGitHub {
			return hookSecret
		}
		return nil
	}
	opts.OnPush = trigger.OnPush
	srv := httptest.NewServer(source.NewWebhookHandler(opts))
	t.Cleanup(srv.Close)
	return srv.URL
}

// postPush sends a generic push of branch of url, signed with secret (unsigned if
// nil), and returns the status code.
func postPush(t testing.TB, receiver, url, branch string, secret []byte) int {
	t.Helper()
	body := []byte(fmt.Sprintf(`{"url": %q, "branch": %q}`, url, branch))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, receiver+source.WebhookPathPrefix+source.ReceiverGeneric, bytes.NewReader(body))
	harness.Must(t, err)
	if secret != nil {
		req.Header.Set("X-Tether-Signature", "sha256="+hex.EncodeToString(source.Sign(body, secret)))
	}
	resp, err := http.DefaultClient.Do(req)
	harness.Must(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func TestAPushReachesTheSyncsThatFollowIt(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "web")
	first := repo.Commit(t, apps(1), "one app")
	// The interval is an hour: only a push can bring the Sync to a new commit here.
	s := a.newSync(t, ns, repo.URL())
	a.WaitApplied(t, s, first)
	receiver := startReceiver(t, a.Trigger)
	second := repo.Commit(t, map[string]string{"apps/app-0000.yaml": app("app-0000", "pushed")}, "a push")

	t.Run("unsigned, wrongly signed, and other branches' pushes do nothing", func(t *testing.T) {
		before := repo.Requests()
		if code := postPush(t, receiver, repo.URL(), "main", nil); code != http.StatusUnauthorized {
			t.Errorf("unsigned push: status %d, want 401", code)
		}
		if code := postPush(t, receiver, repo.URL(), "main", []byte("wrong")); code != http.StatusUnauthorized {
			t.Errorf("wrongly signed push: status %d, want 401", code)
		}
		if code := postPush(t, receiver, repo.URL(), "staging", hookSecret); code != http.StatusAccepted {
			t.Errorf("push of another branch: status %d, want 202", code)
		}
		if code := postPush(t, receiver, strings.Replace(repo.URL(), "web.git", "other.git", 1), "main", hookSecret); code != http.StatusAccepted {
			t.Errorf("push of another repository: status %d, want 202", code)
		}
		time.Sleep(time.Second)
		if got := repo.Requests(); got != before {
			t.Errorf("requests went from %+v to %+v, want none", before, got)
		}
	})

	t.Run("a signed push of the branch applies the new commit at once", func(t *testing.T) {
		// The payload names the repository in another spelling than the Sync.
		if code := postPush(t, receiver, strings.ToUpper(repo.URL()[:10])+repo.URL()[10:]+"/", "main", hookSecret); code != http.StatusAccepted {
			t.Fatalf("signed push: status %d, want 202", code)
		}
		a.WaitApplied(t, s, second)
	})

	t.Run("a push received by a replica that is not the leader reaches the leader", func(t *testing.T) {
		standby := tethersync.NewTrigger(a.Client, nil, a.Source, make(chan struct{}))
		third := repo.Commit(t, map[string]string{"apps/app-0000.yaml": app("app-0000", "via-standby")}, "another push")
		if code := postPush(t, startReceiver(t, standby), repo.URL(), "main", hookSecret); code != http.StatusAccepted {
			t.Fatalf("signed push: status %d, want 202", code)
		}
		got := a.WaitApplied(t, s, third)
		if got.Annotations[tethersync.ReconcileRequestedAnnotation] == "" {
			t.Errorf("annotations = %v, want %s set by the standby", got.Annotations, tethersync.ReconcileRequestedAnnotation)
		}
	})
}

func TestATagPushReachesTheSyncsThatFollowARange(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "releases")
	repo.Commit(t, apps(1), "one app")
	first := repo.Tag(t, "v1.0.0")
	s := a.newSync(t, ns, repo.URL(), func(s *v1alpha1.Sync) { s.Spec.Source.Ref = v1alpha1.GitRef{SemVer: ">=1.0 <2"} })
	if got := a.WaitApplied(t, s, first); got.Status.LastAppliedRevision != "v1.0.0@sha1:"+first {
		t.Errorf("revision = %s, want v1.0.0@sha1:%s", got.Status.LastAppliedRevision, first)
	}
	receiver := startReceiver(t, a.Trigger)

	repo.Commit(t, map[string]string{"apps/app-0000.yaml": app("app-0000", "v1.1")}, "release 1.1")
	second := repo.Tag(t, "v1.1.0")
	body := []byte(fmt.Sprintf(`{"url": %q, "tag": "v1.1.0"}`, repo.URL()))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, receiver+source.WebhookPathPrefix+source.ReceiverGeneric, bytes.NewReader(body))
	harness.Must(t, err)
	req.Header.Set("X-Tether-Signature", "sha256="+hex.EncodeToString(source.Sign(body, hookSecret)))
	resp, err := http.DefaultClient.Do(req)
	harness.Must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("tag push: status %d, want 202", resp.StatusCode)
	}
	if got := a.WaitApplied(t, s, second); got.Status.LastAppliedRevision != "v1.1.0@sha1:"+second {
		t.Errorf("revision = %s, want v1.1.0@sha1:%s", got.Status.LastAppliedRevision, second)
	}
}

// BenchmarkWebhookToReconcile measures the time from a signed push notification to
// the Sync's reconcile asking git for the new commit (its ref listing arriving at the
// git server), and to the new commit applied, against the poll a push spares: half
// an interval of one minute on average. Every figure is from the same run.
func BenchmarkWebhookToReconcile(b *testing.B) {
	const pushes = 20
	for b.Loop() {
		a := startAgent(b)
		ns := controlplane.NewNamespace(b, controlplane.Shared(b).Config())
		repo := gitserver.Start(b, gitserver.Options{}).CreateRepo(b, "web")
		s := a.newSync(b, ns, repo.URL())
		a.WaitApplied(b, s, repo.Commit(b, apps(1), "one app"))
		receiver := startReceiver(b, a.Trigger)

		var started, applied []time.Duration
		for i := 0; i < pushes; i++ {
			commit := repo.Commit(b, map[string]string{"apps/app-0000.yaml": app("app-0000", fmt.Sprint(i))}, "push")
			listings := repo.Requests().RefListings
			start := time.Now()
			if code := postPush(b, receiver, repo.URL(), "main", hookSecret); code != http.StatusAccepted {
				b.Fatalf("push: status %d", code)
			}
			for repo.Requests().RefListings == listings {
				time.Sleep(100 * time.Microsecond)
			}
			started = append(started, time.Since(start))
			for got := (&v1alpha1.Sync{}); !strings.HasSuffix(got.Status.LastAppliedRevision, commit); {
				if time.Since(start) > waitTimeout {
					b.Fatalf("%s was not applied within %s", commit, waitTimeout)
				}
				time.Sleep(2 * time.Millisecond)
				harness.Must(b, a.Client.Get(b.Context(), client.ObjectKeyFromObject(s), got))
			}
			applied = append(applied, time.Since(start))
		}
		poll := 30 * time.Second
		p50s, p50a := median(started), median(applied)
		fmt.Printf("\nwebhook → reconcile, %d pushes on loopback (median):\n", pushes)
		fmt.Printf("  push → reconcile asks git       %10s   %8.0f× faster than polling (½ of a 1m interval)\n", p50s.Round(time.Microsecond), poll.Seconds()/p50s.Seconds())
		fmt.Printf("  push → new commit applied       %10s   %8.0f× faster than polling\n", p50a.Round(time.Microsecond), poll.Seconds()/p50a.Seconds())
		b.ReportMetric(float64(p50s.Microseconds())/1000, "push-to-reconcile-ms")
		b.ReportMetric(float64(p50a.Microseconds())/1000, "push-to-applied-ms")
	}
}

func median(ds []time.Duration) time.Duration {
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

func TestALoopOfReconcileRequestsListsNoMoreOftenThanTheMinimumInterval(t *testing.T) {
	a := startAgent(t) // MinInterval: 1s
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "web")
	first := repo.Commit(t, apps(1), "one app")
	s := a.newSync(t, ns, repo.URL()) // interval of an hour: only the requests ask git
	a.WaitApplied(t, s, first)

	const requests = 40
	before, start := repo.Requests(), time.Now()
	var pushed, last string
	for i := range requests {
		if i == requests/2 {
			pushed = repo.Commit(t, map[string]string{"apps/app-0000.yaml": app("app-0000", "pushed")}, "a push")
		}
		last = fmt.Sprintf("loop-%d", i)
		patch := client.MergeFrom(s.DeepCopy())
		s.Annotations = map[string]string{tethersync.ReconcileRequestedAnnotation: last}
		harness.Must(t, a.Client.Patch(t.Context(), s, patch))
		// The loop's cadence, not a wait for anything: the assertion below counts
		// listings over the window this loop and its answer actually took.
		time.Sleep(50 * time.Millisecond)
	}
	got := a.WaitFor(t, s, "the last request answered", func(s *v1alpha1.Sync) bool {
		return s.Status.LastHandledReconcileAt == last
	})
	window := time.Since(start)
	listings := repo.Requests().RefListings - before.RefListings
	t.Logf("%d requests over %s: %d ref listings (fetches %d)", requests, window.Round(time.Millisecond), listings, repo.Requests().Fetches-before.Fetches)

	t.Run("the requests force at most one listing per minimum interval", func(t *testing.T) {
		// One per started second of the window, and one more for the fetch of
		// the pushed commit (go-git's fetch lists the refs again).
		if most := int(window/time.Second) + 2; listings > most {
			t.Errorf("%d ref listings over %s, want at most %d (one per second, the minimum interval, and the fetch)", listings, window.Round(time.Millisecond), most)
		}
	})
	t.Run("the last request is answered with the commit pushed during the loop", func(t *testing.T) {
		if !strings.HasSuffix(got.Status.SourceRevision, pushed) {
			t.Errorf("sourceRevision = %s, want commit %s", got.Status.SourceRevision, pushed)
		}
	})
}
