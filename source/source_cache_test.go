package source

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/gitserver"
)

var mainBranch = v1alpha1.GitRef{Branch: "main"}

func newCacheTestSource(t *testing.T, opts Options) *Source {
	t.Helper()
	opts.CacheDir, opts.AllowFileURLs = t.TempDir(), true
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func cachedRepos(t *testing.T, s *Source) int {
	t.Helper()
	dirs, err := os.ReadDir(filepath.Join(s.opts.CacheDir, "git"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(dirs)
}

func mustFetch(t *testing.T, s *Source, url string) Revision {
	t.Helper()
	rev, err := s.Fetch(t.Context(), Request{URL: url, Ref: mainBranch})
	if err != nil {
		t.Fatalf("Fetch %s: %v", url, err)
	}
	return rev
}

func TestGitCacheIsKeyedByNormalisedURL(t *testing.T) {
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "deploy")
	repo.Commit(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"}, "one")
	s := newCacheTestSource(t, Options{})
	plain := repo.URL()
	for _, url := range []string{plain, strings.Replace(plain, "http://", "http://someone:token@", 1)} {
		mustFetch(t, s, url)
	}
	if n := cachedRepos(t, s); n != 1 {
		t.Errorf("two spellings of one URL take %d cache directories; want 1", n)
	}
	if got := repo.Requests().Fetches; got != 1 {
		t.Errorf("%d fetches for two spellings of one URL at one commit; want 1", got)
	}
}

func TestGitCacheRemovesRepositoriesNoOneUses(t *testing.T) {
	old, current := gitserver.NewLocalRepo(t, "old"), gitserver.NewLocalRepo(t, "current")
	for _, r := range []*gitserver.Repo{old, current} {
		r.Commit(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"}, "one")
	}
	s := newCacheTestSource(t, Options{CacheIdle: time.Hour})
	mustFetch(t, s, old.URL())
	start := time.Now()
	s.now = func() time.Time { return start.Add(30 * time.Minute) }
	mustFetch(t, s, current.URL())
	if n := cachedRepos(t, s); n != 2 {
		t.Fatalf("%d cached repositories; want both while neither is idle", n)
	}

	s.now = func() time.Time { return start.Add(80 * time.Minute) }
	mustFetch(t, s, current.URL()) // sweeps: old has been idle for 80 minutes
	if n := cachedRepos(t, s); n != 1 {
		t.Errorf("%d cached repositories; want only the one in use", n)
	}
	if _, ok := s.repos[cacheKey(old.URL())]; ok {
		t.Error("the idle repository is still held in memory")
	}
	mustFetch(t, s, old.URL()) // and it comes back when asked for
}

func TestGitCacheOverItsCapFailsClearlyAndEvictsNothing(t *testing.T) {
	first, second := gitserver.NewLocalRepo(t, "first"), gitserver.NewLocalRepo(t, "second")
	for _, r := range []*gitserver.Repo{first, second} {
		r.Commit(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"}, "one")
	}
	s := newCacheTestSource(t, Options{})
	firstRev := mustFetch(t, s, first.URL())
	used, err := dirSize(filepath.Join(s.opts.CacheDir, "git"))
	if err != nil {
		t.Fatal(err)
	}
	s.opts.MaxCacheBytes = used - 1

	_, err = s.Fetch(t.Context(), Request{URL: second.URL(), Ref: mainBranch})
	var fe *FetchError
	if !errors.As(err, &fe) || fe.Reason != ReasonCacheFull || !strings.Contains(err.Error(), "over the agent's limit") {
		t.Fatalf("Fetch over the cap: %v; want a FetchError with reason %s", err, ReasonCacheFull)
	}
	t.Run("a repository cached already still polls and renders", func(t *testing.T) {
		s.now = func() time.Time { return time.Now().Add(time.Minute) } // past MaxAge: asks the remote
		if rev := mustFetch(t, s, first.URL()); rev.Commit != firstRev.Commit {
			t.Errorf("Fetch = %s, want %s", rev.Commit, firstRev.Commit)
		}
		if _, err := s.Render(t.Context(), firstRev, "."); err != nil {
			t.Errorf("Render: %v", err)
		}
	})
	t.Run("with the cap raised, the fetch succeeds", func(t *testing.T) {
		s.opts.MaxCacheBytes = 0
		mustFetch(t, s, second.URL())
	})
}
