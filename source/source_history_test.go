package source_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
)

func TestDescendsTellsAForwardMoveFromARewrite(t *testing.T) {
	repo := gitserver.NewLocalRepo(t, "deploy")
	src := newSource(t, source.Options{AllowFileURLs: true})
	req := source.Request{URL: repo.URL(), Ref: main}
	a := repo.Commit(t, map[string]string{"cm.yaml": configMap("web", "a")}, "a")
	fetch(t, src, req)
	b := repo.Commit(t, map[string]string{"cm.yaml": configMap("web", "b")}, "b")
	fetch(t, src, req)
	repo.ForcePush(t, a)
	c := repo.Commit(t, map[string]string{"cm.yaml": configMap("web", "c")}, "c, on a rewritten history")
	fetch(t, src, req)

	for _, tc := range []struct {
		name     string
		from, to string
		want     bool
	}{
		{"a push moves a branch forward", a, b, true},
		{"a commit descends from itself", b, b, true},
		{"a force-push to an older commit is no forward move", b, a, false},
		{"a rewritten history is no forward move", b, c, false},
		{"the rewritten history still descends from the common base", a, c, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := src.Descends(repo.URL(), tc.from, tc.to)
			if err != nil || got != tc.want {
				t.Errorf("Descends(%.7s, %.7s) = %v, %v; want %v", tc.from, tc.to, got, err, tc.want)
			}
		})
	}
	t.Run("a commit the cache never saw leaves the answer open", func(t *testing.T) {
		_, err := src.Descends(repo.URL(), strings.Repeat("ab", 20), c)
		if !errors.Is(err, source.ErrHistoryUnknown) {
			t.Errorf("err = %v, want ErrHistoryUnknown", err)
		}
	})
}

func TestAHostsFailureIsRememberedNoLongerThanTheCallersInterval(t *testing.T) {
	// A port nobody listens on: connection refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String() + "/repo.git"
	_ = l.Close()
	const maxAge = 2 * time.Second
	src := newSource(t, source.Options{HostFailureMemory: time.Hour})
	req := source.Request{URL: down, Ref: main, MaxAge: maxAge}

	asked := func() (bool, error) {
		_, err := src.Fetch(t.Context(), req)
		if reason := fetchReason(t, err); reason != source.ReasonHostUnreachable {
			t.Fatalf("reason = %s, want %s (error %v)", reason, source.ReasonHostUnreachable, err)
		}
		return !strings.Contains(err.Error(), "not asked again"), err
	}
	if ok, err := asked(); !ok {
		t.Fatalf("the first fetch did not ask the host: %v", err)
	}
	if ok, err := asked(); ok {
		t.Errorf("a fetch right after the failure asked the host again; want the failure from memory (%v)", err)
	}
	// The host is asked again once the interval has passed: poll until it is, and
	// fail if the memory outlasts a few intervals (it is an hour long).
	deadline := time.Now().Add(5 * maxAge)
	for {
		ok, err := asked()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fetch asked the host within %s of the failure (memory of an hour, interval %s): %v", 5*maxAge, maxAge, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestAFirstFetchTakesOnlyTheRefsCommitAndHistoryStillTells(t *testing.T) {
	srv := gitserver.Start(t, gitserver.Options{})
	repo := srv.CreateRepo(t, "deploy")
	// Ten commits, each replacing 256 KiB of data: 2.5 MiB of history, 256 KiB at the tip.
	var old []string
	for i := range 10 {
		old = append(old, repo.Commit(t, map[string]string{
			"cm.yaml":  configMap("web", strings.Repeat("v", i+1)),
			"data.txt": source.RandomText(uint64(i), 256<<10),
		}, "version"))
	}
	src := newSource(t, source.Options{})
	req := source.Request{URL: repo.URL(), Ref: main}
	tip := old[len(old)-1]

	t.Run("the first fetch takes the tip, not the history", func(t *testing.T) {
		before := repo.Traffic().Sent
		if rev := fetch(t, src, req); rev.Commit != tip {
			t.Fatalf("revision = %s, want %s", rev.Commit, tip)
		}
		sent := repo.Traffic().Sent - before
		t.Logf("the first fetch received %d KiB", sent>>10)
		if sent > 1<<20 {
			t.Errorf("the first fetch received %d KiB, want about the 256 KiB the tip holds (the history is 2.5 MiB)", sent>>10)
		}
	})

	next := repo.Commit(t, map[string]string{"cm.yaml": configMap("web", "next")}, "next")
	t.Run("a push is fetched and moves the branch forward", func(t *testing.T) {
		fetch(t, src, req)
		if ok, err := src.Descends(repo.URL(), tip, next); err != nil || !ok {
			t.Errorf("Descends(tip, next) = %v, %v; want true", ok, err)
		}
	})
	t.Run("a force-push to a commit older than the first fetch is fetched, and is no forward move", func(t *testing.T) {
		repo.ForcePush(t, old[3])
		if rev := fetch(t, src, req); rev.Commit != old[3] {
			t.Fatalf("revision = %s, want %s", rev.Commit, old[3])
		}
		if ok, err := src.Descends(repo.URL(), next, old[3]); err != nil || ok {
			t.Errorf("Descends(next, old) = %v, %v; want false", ok, err)
		}
	})
	t.Run("a history rewritten from below the first fetch is no forward move", func(t *testing.T) {
		repo.ForcePush(t, old[5])
		rewritten := repo.Commit(t, map[string]string{"cm.yaml": configMap("web", "rewritten")}, "rewritten")
		if rev := fetch(t, src, req); rev.Commit != rewritten {
			t.Fatalf("revision = %s, want %s", rev.Commit, rewritten)
		}
		if ok, err := src.Descends(repo.URL(), next, rewritten); err != nil || ok {
			t.Errorf("Descends(next, rewritten) = %v, %v; want false", ok, err)
		}
	})
}
