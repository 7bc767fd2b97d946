package gitcache

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/gitserver"
)

// TestOneNamespaceCannotTakeAnothersShareOfTheGitCache: namespace a comes first
// and, alone, fills the git cache with repositories it really uses. Namespace b
// still fetches and renders: a's least recently used repository makes room. a's
// fetch that would take it past its half of the cache then stops on a's Sync
// only, saying why, and b's repositories stay.
func TestOneNamespaceCannotTakeAnothersShareOfTheGitCache(t *testing.T) {
	srv := gitserver.Start(t, gitserver.Options{})
	const big = 512 << 10 // incompressible: a repository of about 400 KB
	repos := map[string]*gitserver.Repo{}
	for i, name := range []string{"a1", "a2", "a3", "b1"} {
		files := map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n"}
		if name != "a3" {
			files["blob.txt"] = randomText(uint64(i+1), big)
		}
		repos[name] = srv.CreateRepo(t, name)
		repos[name].Commit(t, files, "one")
	}
	s := newTestCache(t, Options{})
	fetch := func(tenant, repo string) (Revision, error) {
		return s.Fetch(t.Context(), Request{URL: repos[repo].URL(), Ref: mainBranch, Tenant: tenant})
	}
	for _, name := range []string{"a1", "a2", "a3"} {
		if _, err := fetch("a", name); err != nil {
			t.Fatalf("namespace a fetching %s alone: %v", name, err)
		}
	}
	u, err := s.dir.measure()
	if err != nil {
		t.Fatal(err)
	}
	one := u.dirs[dirOf(s, repos["a1"].URL())].bytes
	// a's three repositories fill the cache but for half a large one: b's
	// repository does not fit unless a makes room. Each namespace's share is then
	// 1.25 large repositories.
	s.opts.MaxCacheBytes = u.total + one/2
	t.Logf("one large repository takes %d bytes; cap %d, a share %d", one, s.opts.MaxCacheBytes, s.opts.MaxCacheBytes/2)

	var bRev Revision
	t.Run("namespace b fetches and renders in a cache namespace a filled", func(t *testing.T) {
		if bRev, err = fetch("b", "b1"); err != nil {
			t.Fatalf("namespace b's fetch: %v; want it to succeed, a being over its share", err)
		}
		if _, err := s.Tree(bRev, "."); err != nil {
			t.Errorf("Tree: %v", err)
		}
		assertUnderCap(t, s)
	})
	t.Run("a's least recently used repository made the room, and only it", func(t *testing.T) {
		for name, want := range map[string]bool{"a1": false, "a2": true, "a3": true, "b1": true} {
			if got := cached(t, s, repos[name].URL()); got != want {
				t.Errorf("%s cached: %t, want %t", name, got, want)
			}
		}
	})
	t.Run("a's fetch that would pass its share stops on a's Sync only, naming the share", func(t *testing.T) {
		_, err := fetch("a", "a1")
		var fe *FetchError
		if !errors.As(err, &fe) || fe.Reason != v1alpha1.ReasonCacheFull {
			t.Fatalf("a's fetch of a1 again: %v; want a FetchError with reason %s", err, v1alpha1.ReasonCacheFull)
		}
		for _, want := range []string{"was stopped after", "namespace a's repositories", "its share of", "shared by the 2 namespaces"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not say %q: %v", want, err)
			}
		}
		t.Logf("%v", err)
		assertUnderCap(t, s)
	})
	t.Run("nothing of b's was evicted or refused because of it", func(t *testing.T) {
		if !cached(t, s, repos["b1"].URL()) {
			t.Fatal("b1 is no longer cached")
		}
		next := repos["b1"].Commit(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b2}\n"}, "two")
		rev, err := fetch("b", "b1")
		if err != nil || rev.Commit != next {
			t.Fatalf("b's fetch of a new commit: %v, %v; want %s", rev.Commit, err, next)
		}
		if _, err := s.Tree(rev, "."); err != nil {
			t.Errorf("Tree: %v", err)
		}
	})
	t.Run("a's repositories within its share still poll and render", func(t *testing.T) {
		s.now = func() time.Time { return time.Now().Add(time.Minute) } // past MaxAge: asks the remote
		rev, err := fetch("a", "a2")
		if err != nil {
			t.Fatalf("a's fetch of a2: %v", err)
		}
		if _, err := s.Tree(rev, "."); err != nil {
			t.Errorf("Tree: %v", err)
		}
	})
}

// dirOf is the base name of url's cache directory.
func dirOf(s *Cache, url string) string {
	return filepath.Base(s.dir.of(url))
}

// cached reports whether url's repository holds a commit in the cache.
func cached(t *testing.T, s *Cache, url string) bool {
	t.Helper()
	u, err := s.dir.measure()
	if err != nil {
		t.Fatal(err)
	}
	return u.dirs[dirOf(s, url)].packed
}

func assertUnderCap(t *testing.T, s *Cache) {
	t.Helper()
	u, err := s.dir.measure()
	if err != nil {
		t.Fatal(err)
	}
	if u.total > s.opts.MaxCacheBytes {
		t.Errorf("the cache takes %d bytes, over its cap of %d", u.total, s.opts.MaxCacheBytes)
	}
}

// TestAShareCountsSharedRepositoriesFairlyAndAlwaysAllowsOne: a repository that
// two namespaces follow counts half to each, and a namespace may always have one
// repository, even one larger than its share, while the cap has room; a second
// one it may not have until it is back within its share.
func TestAShareCountsSharedRepositoriesFairlyAndAlwaysAllowsOne(t *testing.T) {
	srv := gitserver.Start(t, gitserver.Options{})
	const large = 512 << 10 // incompressible: about 400 KB
	repos := map[string]*gitserver.Repo{}
	for i, r := range []struct {
		name string
		size int
	}{{"shared", large}, {"a1", 0}, {"a2", 0}, {"c1", 3 * large / 2}, {"c2", 0}} {
		files := map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + r.name + "}\n"}
		if r.size > 0 {
			files["blob.txt"] = randomText(uint64(i+10), r.size)
		}
		repos[r.name] = srv.CreateRepo(t, r.name)
		repos[r.name].Commit(t, files, "one")
	}
	s := newTestCache(t, Options{})
	fetch := func(tenant, repo string) error {
		_, err := s.Fetch(t.Context(), Request{URL: repos[repo].URL(), Ref: mainBranch, Tenant: tenant})
		return err
	}
	must := func(tenant, repo string) {
		t.Helper()
		if err := fetch(tenant, repo); err != nil {
			t.Fatalf("namespace %s fetching %s: %v", tenant, repo, err)
		}
	}
	must("a", "shared")
	u, err := s.dir.measure()
	if err != nil {
		t.Fatal(err)
	}
	one := u.dirs[dirOf(s, repos["shared"].URL())].bytes
	// Three namespaces, each with a share of about one large repository.
	s.opts.MaxCacheBytes = 3 * one
	must("a", "a1")
	must("b", "shared")

	t.Run("a namespace's only repository may be larger than its share", func(t *testing.T) {
		must("c", "c1")
		s.mu.Lock()
		sh := s.sharesOf(mustMeasure(t, s), s.now(), "c")
		s.mu.Unlock()
		if !sh.over("c") {
			t.Fatalf("c takes %d bytes, within its share of %d: the test needs its only repository larger", sh.taken["c"], sh.limit)
		}
		assertUnderCap(t, s)
	})
	t.Run("a repository two namespaces follow counts half to each", func(t *testing.T) {
		// Counted whole, the shared repository alone would fill a's share.
		must("a", "a2")
		s.mu.Lock()
		sh := s.sharesOf(mustMeasure(t, s), s.now(), "a")
		s.mu.Unlock()
		if got, most := sh.taken["a"], one/2+one/4; got > most {
			t.Errorf("a takes %d bytes; want about half of the shared repository (%d), at most %d", got, one/2, most)
		}
	})
	t.Run("a second repository of a namespace past its share is refused, naming the share", func(t *testing.T) {
		err := fetch("c", "c2")
		var fe *FetchError
		if !errors.As(err, &fe) || fe.Reason != v1alpha1.ReasonCacheFull {
			t.Fatalf("c's second repository: %v; want a FetchError with reason %s", err, v1alpha1.ReasonCacheFull)
		}
		for _, want := range []string{"namespace c's repositories take", "over its share of", "shared by the 3 namespaces"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not say %q: %v", want, err)
			}
		}
		t.Logf("%v", err)
	})
}

func mustMeasure(t *testing.T, s *Cache) cacheUsage {
	t.Helper()
	u, err := s.dir.measure()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestANamespaceOverItsShareGivesUpARepositoryItNoLongerAsksFor: namespace a's
// Sync moves from repository a1 to a3, which its share cannot hold beside a1 and
// a2. a1, which no Sync of a has asked for in Options.CacheKeepRecent, makes the
// room, and nothing of b's goes; a repository a asked for lately is never given
// up for another of a's (a's fetch is refused instead, so that its Syncs do not
// take turns fetching), and b still fetches meanwhile.
func TestANamespaceOverItsShareGivesUpARepositoryItNoLongerAsksFor(t *testing.T) {
	srv := gitserver.Start(t, gitserver.Options{})
	const large = 512 << 10 // incompressible: a repository of about 400 KB
	repos := map[string]*gitserver.Repo{}
	for i, name := range []string{"a1", "a2", "a3", "b1"} {
		repos[name] = srv.CreateRepo(t, name)
		repos[name].Commit(t, map[string]string{
			"cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\n",
			"blob.txt": randomText(uint64(i+20), large),
		}, "one")
	}
	s := newTestCache(t, Options{})
	start := time.Now()
	clock := start
	s.now = func() time.Time { return clock }
	fetch := func(tenant, repo string) (Revision, error) {
		return s.Fetch(t.Context(), Request{URL: repos[repo].URL(), Ref: mainBranch, Tenant: tenant})
	}
	must := func(t *testing.T, tenant, repo string) Revision {
		t.Helper()
		rev, err := fetch(tenant, repo)
		if err != nil {
			t.Fatalf("namespace %s fetching %s: %v", tenant, repo, err)
		}
		return rev
	}
	must(t, "b", "b1")
	one := mustMeasure(t, s).dirs[dirOf(s, repos["b1"].URL())].bytes
	// Two namespaces, each with a share of two and a half large repositories; the
	// cap itself holds all four.
	s.opts.MaxCacheBytes = 5 * one
	must(t, "a", "a1")
	must(t, "a", "a2")
	keep := 10 * time.Minute // DefaultOptions' CacheKeepRecent
	// Later, a's Syncs follow a2 only, and b's b1.
	clock = start.Add(keep + time.Minute)
	must(t, "a", "a2")
	must(t, "b", "b1")

	t.Run("a's Sync moved to a3: a1, which a no longer asks for, makes the room", func(t *testing.T) {
		rev := must(t, "a", "a3")
		if _, err := s.Tree(rev, "."); err != nil {
			t.Errorf("Tree: %v", err)
		}
		for name, want := range map[string]bool{"a1": false, "a2": true, "a3": true, "b1": true} {
			if got := cached(t, s, repos[name].URL()); got != want {
				t.Errorf("%s cached: %t, want %t", name, got, want)
			}
		}
		assertUnderCap(t, s)
	})
	t.Run("a repository a asked for lately is never given up for another of a's", func(t *testing.T) {
		_, err := fetch("a", "a1")
		var fe *FetchError
		if !errors.As(err, &fe) || fe.Reason != v1alpha1.ReasonCacheFull {
			t.Fatalf("a's fetch of a1 again: %v; want a FetchError with reason %s", err, v1alpha1.ReasonCacheFull)
		}
		for _, want := range []string{"namespace a's repositories take", "its share of", "asked for within the last " + keep.String()} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not say %q: %v", want, err)
			}
		}
		t.Logf("%v", err)
		for _, name := range []string{"a2", "a3", "b1"} {
			if !cached(t, s, repos[name].URL()) {
				t.Errorf("%s is no longer cached", name)
			}
		}
	})
	t.Run("b's new commit is fetched and rendered meanwhile", func(t *testing.T) {
		next := repos["b1"].Commit(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b2}\n"}, "two")
		rev := must(t, "b", "b1")
		if rev.Commit != next {
			t.Fatalf("b fetched %s, want %s", rev.Commit, next)
		}
		if _, err := s.Tree(rev, "."); err != nil {
			t.Errorf("Tree: %v", err)
		}
	})
	t.Run("a third namespace leaves a over its share: a gives up a2, which it no longer asks for, to poll a3", func(t *testing.T) {
		// Later still, a's Syncs follow a3 only; c comes, and the shares shrink to
		// five thirds of a large repository: a, with a2 and a3, is over its share
		// before it fetches at all.
		clock = clock.Add(keep + time.Minute)
		must(t, "b", "b1")
		c1 := srv.CreateRepo(t, "c1")
		c1.Commit(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c1}\n", "blob.txt": randomText(30, large)}, "one")
		if _, err := s.Fetch(t.Context(), Request{URL: c1.URL(), Ref: mainBranch, Tenant: "c"}); err != nil {
			t.Fatalf("namespace c fetching c1: %v", err)
		}
		next := repos["a3"].Commit(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a3-two}\n"}, "two")
		if rev := must(t, "a", "a3"); rev.Commit != next {
			t.Fatalf("a fetched %s, want %s", rev.Commit, next)
		}
		for name, want := range map[string]bool{"a2": false, "a3": true, "b1": true} {
			if got := cached(t, s, repos[name].URL()); got != want {
				t.Errorf("%s cached: %t, want %t", name, got, want)
			}
		}
		if !cached(t, s, c1.URL()) {
			t.Error("c1 is no longer cached")
		}
		assertUnderCap(t, s)
	})
}

// TestAFullCacheTakesAFetchersOwnUnaskedRepositoryFirst: the cache is full, of
// b's one repository (larger than b's share, and b's only one, so it stays)
// and a's a1, which a's Syncs no longer ask for. a's fetch of a2, within a's
// share, gives a1 up instead of stopping with CacheFull.
func TestAFullCacheTakesAFetchersOwnUnaskedRepositoryFirst(t *testing.T) {
	srv := gitserver.Start(t, gitserver.Options{})
	const large = 512 << 10 // incompressible: a repository of about 400 KB
	repos := map[string]*gitserver.Repo{}
	for i, r := range []struct {
		name string
		size int
	}{{"a1", large}, {"a2", large}, {"b1", 3 * large}} {
		repos[r.name] = srv.CreateRepo(t, r.name)
		repos[r.name].Commit(t, map[string]string{
			"cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + r.name + "}\n",
			"blob.txt": randomText(uint64(i+40), r.size),
		}, "one")
	}
	s := newTestCache(t, Options{})
	start := time.Now()
	clock := start
	s.now = func() time.Time { return clock }
	fetch := func(tenant, repo string) (Revision, error) {
		return s.Fetch(t.Context(), Request{URL: repos[repo].URL(), Ref: mainBranch, Tenant: tenant})
	}
	for _, f := range []struct{ tenant, repo string }{{"b", "b1"}, {"a", "a1"}} {
		if _, err := fetch(f.tenant, f.repo); err != nil {
			t.Fatalf("namespace %s fetching %s: %v", f.tenant, f.repo, err)
		}
	}
	one := mustMeasure(t, s).dirs[dirOf(s, repos["a1"].URL())].bytes
	// Shares of two and a quarter large repositories: a2 fits a's beside a1, but
	// not the cap beside a1 and b1.
	s.opts.MaxCacheBytes = 4*one + one/2
	clock = start.Add(10*time.Minute + time.Minute) // past DefaultOptions' CacheKeepRecent
	if _, err := fetch("b", "b1"); err != nil {
		t.Fatalf("namespace b polling b1: %v", err)
	}

	rev, err := fetch("a", "a2")
	if err != nil {
		t.Fatalf("namespace a fetching a2: %v; want a1, which a no longer asks for, to make the room", err)
	}
	if _, err := s.Tree(rev, "."); err != nil {
		t.Errorf("Tree: %v", err)
	}
	for name, want := range map[string]bool{"a1": false, "a2": true, "b1": true} {
		if got := cached(t, s, repos[name].URL()); got != want {
			t.Errorf("%s cached: %t, want %t", name, got, want)
		}
	}
	assertUnderCap(t, s)
}
