package gitcache

import (
	"encoding/base64"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/gitserver"
)

var mainBranch = v1alpha1.GitRef{Branch: "main"}

func newTestCache(t *testing.T, opts Options) *Cache {
	t.Helper()
	d := DefaultOptions()
	if opts.CacheIdle != 0 {
		d.CacheIdle = opts.CacheIdle
	}
	d.CacheDir, d.AllowFileURLs = t.TempDir(), true
	s, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func cachedRepos(t *testing.T, s *Cache) int {
	t.Helper()
	dirs, err := os.ReadDir(filepath.Join(s.opts.CacheDir, "git"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(dirs)
}

// openFilesUnder lists the files under dir this process holds open.
func openFilesUnder(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot list open files: %v", err)
	}
	var open []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			open = append(open, target)
		}
	}
	return open
}

func mustFetch(t *testing.T, s *Cache, url string) Revision {
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
	s := newTestCache(t, Options{})
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
	s := newTestCache(t, Options{CacheIdle: time.Hour})
	oldRev := mustFetch(t, s, old.URL())
	if _, err := s.Tree(oldRev, "."); err != nil {
		t.Fatal(err)
	}
	oldDir := s.dir.of(old.URL())
	if open := openFilesUnder(t, oldDir); len(open) == 0 {
		t.Fatalf("no file of %s open after a render; want its pack kept open", oldDir)
	}
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
	if open := openFilesUnder(t, oldDir); len(open) != 0 {
		t.Errorf("files of the removed repository still open: %v", open)
	}
	mustFetch(t, s, old.URL()) // and it comes back when asked for
}

func TestGitCacheOverItsCapFailsClearlyAndEvictsNothing(t *testing.T) {
	first, second := gitserver.NewLocalRepo(t, "first"), gitserver.NewLocalRepo(t, "second")
	for _, r := range []*gitserver.Repo{first, second} {
		r.Commit(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"}, "one")
	}
	s := newTestCache(t, Options{})
	firstRev := mustFetch(t, s, first.URL())
	used, err := dirSize(filepath.Join(s.opts.CacheDir, "git"))
	if err != nil {
		t.Fatal(err)
	}
	s.opts.MaxCacheBytes = used - 1

	_, err = s.Fetch(t.Context(), Request{URL: second.URL(), Ref: mainBranch})
	var fe *FetchError
	if !errors.As(err, &fe) || fe.Reason != v1alpha1.ReasonCacheFull || !strings.Contains(err.Error(), "over the agent's limit") {
		t.Fatalf("Fetch over the cap: %v; want a FetchError with reason %s", err, v1alpha1.ReasonCacheFull)
	}
	t.Run("a repository cached already still polls and renders", func(t *testing.T) {
		s.now = func() time.Time { return time.Now().Add(time.Minute) } // past MaxAge: asks the remote
		if rev := mustFetch(t, s, first.URL()); rev.Commit != firstRev.Commit {
			t.Errorf("Fetch = %s, want %s", rev.Commit, firstRev.Commit)
		}
		if _, err := s.Tree(firstRev, "."); err != nil {
			t.Errorf("Tree: %v", err)
		}
	})
	t.Run("with the cap raised, the fetch succeeds", func(t *testing.T) {
		s.opts.MaxCacheBytes = 0
		mustFetch(t, s, second.URL())
	})
}

func TestTheCacheCapHoldsWhileAFetchRuns(t *testing.T) {
	srv := gitserver.Start(t, gitserver.Options{})
	small, big := srv.CreateRepo(t, "small"), srv.CreateRepo(t, "big")
	small.Commit(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"}, "one")
	big.Commit(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n", "blob.txt": randomText(1, 4<<20)}, "four MiB")
	s := newTestCache(t, Options{})
	mustFetch(t, s, small.URL())
	used, err := dirSize(filepath.Join(s.opts.CacheDir, "git"))
	if err != nil {
		t.Fatal(err)
	}
	// Room for a small commit, not for a repository of 4 MiB.
	s.opts.MaxCacheBytes = used + 1<<20

	t.Run("the fetch that would pass the cap stops and says so", func(t *testing.T) {
		_, err := s.Fetch(t.Context(), Request{URL: big.URL(), Ref: mainBranch})
		var fe *FetchError
		if !errors.As(err, &fe) || fe.Reason != v1alpha1.ReasonCacheFull || !strings.Contains(err.Error(), "was stopped after") {
			t.Fatalf("Fetch of 4 MiB under a cap with 1 MiB of room: %v; want a FetchError with reason %s, stopped while fetching", err, v1alpha1.ReasonCacheFull)
		}
		t.Logf("%v", err)
	})
	t.Run("it leaves the cache under the cap, with nothing of its pack", func(t *testing.T) {
		now, err := dirSize(filepath.Join(s.opts.CacheDir, "git"))
		if err != nil {
			t.Fatal(err)
		}
		if now > s.opts.MaxCacheBytes {
			t.Errorf("the cache takes %d bytes, over its cap of %d", now, s.opts.MaxCacheBytes)
		}
		partial, _ := filepath.Glob(filepath.Join(s.opts.CacheDir, "git", "*", "objects", "pack", partialPackPrefix+"*"))
		if len(partial) > 0 {
			t.Errorf("partial packs left behind: %v", partial)
		}
		if got := s.receiving.Load(); got != 0 {
			t.Errorf("%d bytes still counted as being received", got)
		}
	})
	t.Run("the other repositories go on fetching new commits", func(t *testing.T) {
		next := small.Commit(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"}, "two")
		if rev := mustFetch(t, s, small.URL()); rev.Commit != next {
			t.Errorf("Fetch = %s, want %s", rev.Commit, next)
		}
	})
}

// randomText is n bytes that compress poorly, the same for the same seed: the
// data of a repository that costs what it weighs.
func randomText(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n*3/4+3)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return base64.StdEncoding.EncodeToString(b)[:n]
}
