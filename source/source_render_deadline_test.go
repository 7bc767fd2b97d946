package source

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"tether.dev/tether/test/gitserver"
)

// TestEveryRenderHasADeadline: a render that does not finish (here one held by
// a test hook, as a render stuck inside kustomize would be) costs its caller at
// most RenderTimeout, and its slot is free again as soon as the caller stops
// waiting, so other renders proceed even with a single slot.
func TestEveryRenderHasADeadline(t *testing.T) {
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "deploy")
	cm := func(name string) string { return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n" }
	repo.Commit(t, map[string]string{"stuck/cm.yaml": cm("stuck"), "app/cm.yaml": cm("app"), "other/cm.yaml": cm("other"), "slow/cm.yaml": cm("slow")}, "one")
	const deadline = time.Second
	s := newCacheTestSource(t, Options{MaxConcurrentRenders: 1, RenderTimeout: deadline})
	rev := mustFetch(t, s, repo.URL())

	release := map[string]chan struct{}{"stuck": make(chan struct{}), "slow": make(chan struct{})}
	started := map[string]*atomic.Int64{"stuck": {}, "slow": {}, "app": {}, "other": {}}
	entered := make(chan string, 16)
	s.beforeRender = func(dir string) {
		started[dir].Add(1)
		entered <- dir
		if r, ok := release[dir]; ok {
			<-r
		}
	}
	t.Cleanup(func() { close(release["stuck"]) }) // "slow" is released by its step

	// renderFor renders dir and fails the test if the call takes longer than
	// bound: a caller's wait is bounded whatever the render does.
	renderFor := func(ctx context.Context, t *testing.T, dir string, bound time.Duration) error {
		t.Helper()
		start := time.Now()
		_, err := s.Render(ctx, rev, dir, Helm{})
		if took := time.Since(start); took > bound {
			t.Errorf("Render(%s) took %s; want at most %s", dir, took.Round(time.Millisecond), bound)
		}
		return err
	}

	t.Run("a render past its deadline fails, naming the path", func(t *testing.T) {
		err := renderFor(t.Context(), t, "stuck", deadline+5*time.Second)
		var re *RenderError
		if !errors.As(err, &re) || re.File != "stuck" || !errors.Is(err, ErrRenderTimeout) {
			t.Fatalf("Render(stuck) error = %v; want a *RenderError for stuck wrapping ErrRenderTimeout", err)
		}
	})

	t.Run("its slot is free again: another render proceeds at once", func(t *testing.T) {
		if err := renderFor(t.Context(), t, "app", 5*time.Second); err != nil {
			t.Fatalf("Render(app) error = %v; want it rendered while stuck is still running", err)
		}
	})

	t.Run("asking again for the stuck render joins it instead of starting another", func(t *testing.T) {
		err := renderFor(t.Context(), t, "stuck", deadline+5*time.Second)
		if !errors.Is(err, ErrRenderTimeout) {
			t.Errorf("Render(stuck) error = %v; want ErrRenderTimeout", err)
		}
		if n := started["stuck"].Load(); n != 1 {
			t.Errorf("stuck was started %d times; want once", n)
		}
	})

	t.Run("a caller that gives up gives back its slot", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- renderFor(ctx, t, "slow", 5*time.Second) }()
		waitFor(t, entered, "slow")
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) || IsRenderError(err) {
			t.Errorf("Render(slow) error = %v; want the caller's cancellation, not a RenderError", err)
		}
		if err := renderFor(t.Context(), t, "other", 5*time.Second); err != nil {
			t.Fatalf("Render(other) error = %v; want it rendered after slow's caller gave up", err)
		}
	})

	t.Run("a render given up on fills the cache when it finishes", func(t *testing.T) {
		call := s.running(renderKey(rev, "slow", nil))
		if call == nil {
			t.Fatal("the render of slow is not running")
		}
		close(release["slow"])
		select {
		case <-call.done:
		case <-time.After(10 * time.Second):
			t.Fatal("the render of slow did not finish once released")
		}
		snap, err := s.Render(t.Context(), rev, "slow", Helm{})
		if err != nil || len(snap.Objects) != 1 {
			t.Fatalf("Render(slow) = %v; want the ConfigMap", err)
		}
		if n := started["slow"].Load(); n != 1 {
			t.Errorf("slow was started %d times; want once, its result cached", n)
		}
	})
}

// waitFor waits until dir is read from entered.
func waitFor(t *testing.T, entered <-chan string, dir string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case d := <-entered:
			if d == dir {
				return
			}
		case <-timeout:
			t.Fatalf("render of %s never started", dir)
		}
	}
}

// TestRendersGivenUpOnAreBounded: renders whose callers gave up still hold
// their memory until they finish, so they count. With one slot and one render
// given up on allowed (two running at most), two stuck renders of different
// commits make a third wait, within its deadline, and it is never started; it
// renders once one of them finishes.
func TestRendersGivenUpOnAreBounded(t *testing.T) {
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "deploy")
	cm := func(name string) string { return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n" }
	repo.Commit(t, map[string]string{"a/cm.yaml": cm("a"), "b/cm.yaml": cm("b"), "c/cm.yaml": cm("c")}, "one")
	const deadline = time.Second
	s := newCacheTestSource(t, Options{MaxConcurrentRenders: 1, MaxRendersGivenUp: 1, RenderTimeout: deadline})
	rev := mustFetch(t, s, repo.URL())

	release := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	var startedC atomic.Int64
	s.beforeRender = func(dir string) {
		if dir == "c" {
			startedC.Add(1)
		}
		if r, ok := release[dir]; ok {
			<-r
		}
	}
	t.Cleanup(func() { close(release["b"]) }) // "a" is released by the test

	for _, dir := range []string{"a", "b"} {
		if _, err := s.Render(t.Context(), rev, dir, Helm{}); !errors.Is(err, ErrRenderTimeout) {
			t.Fatalf("Render(%s) error = %v; want ErrRenderTimeout", dir, err)
		}
	}
	_, err := s.Render(t.Context(), rev, "c", Helm{})
	var re *RenderError
	if !errors.As(err, &re) || re.File != "c" || !errors.Is(err, ErrRenderTimeout) {
		t.Fatalf("Render(c) error = %v; want a *RenderError for c wrapping ErrRenderTimeout while a and b run", err)
	}
	if n := startedC.Load(); n != 0 {
		t.Errorf("c was started %d times while two renders given up on ran; want it to wait", n)
	}

	call := s.running(renderKey(rev, "a", nil))
	close(release["a"])
	<-call.done
	snap, err := s.Render(t.Context(), rev, "c", Helm{})
	if err != nil || len(snap.Objects) != 1 {
		t.Fatalf("Render(c) = %v; want the ConfigMap once a finished", err)
	}
}

// TestALastingRenderFailureIsNotRenderedAgain: a commit whose path does not
// render fails the same way every time, so its failure is kept with the render
// results: a Sync stalled on it, asking at every interval, costs one render, not
// one per interval.
func TestALastingRenderFailureIsNotRenderedAgain(t *testing.T) {
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "deploy")
	repo.Commit(t, map[string]string{"broken/cm.yaml": "kind: [ConfigMap\n"}, "a broken file")
	s := newCacheTestSource(t, Options{})
	rev := mustFetch(t, s, repo.URL())
	var renders atomic.Int64
	s.beforeRender = func(string) { renders.Add(1) }

	var first error
	for i := range 3 {
		_, err := s.Render(t.Context(), rev, "broken", Helm{})
		var re *RenderError
		if !errors.As(err, &re) || re.File != "broken/cm.yaml" {
			t.Fatalf("Render(broken) #%d error = %v; want a *RenderError naming broken/cm.yaml", i+1, err)
		}
		if first == nil {
			first = err
		} else if err.Error() != first.Error() {
			t.Errorf("Render(broken) #%d error = %q; want the first one again, %q", i+1, err, first)
		}
	}
	if n := renders.Load(); n != 1 {
		t.Errorf("broken was rendered %d times for three asks; want once", n)
	}
}
