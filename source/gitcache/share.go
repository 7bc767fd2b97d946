package gitcache

import (
	"cmp"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The git cache is shared fairly between tenants (namespaces), so that one
// namespace's repositories cannot leave the others no room:
//
//   - the tenants of the cache are those that fetched one of its repositories
//     within Options.CacheIdle (and hold a commit, or are fetching now); while
//     there are N of them, each has a share of MaxCacheBytes/N;
//   - what a tenant takes is the size of each repository it fetched, divided
//     evenly between the tenants that fetched it (a repository shared by two
//     namespaces counts half to each);
//   - a fetch that would take its tenant past its share first gives up the
//     tenant's own repositories (those no other tenant uses) that it has not
//     asked for in Options.CacheKeepRecent, least recently asked first: a Sync
//     that moved to another repository, or is gone, leaves room for the new one
//     without waiting for CacheIdle. Failing that, it stops with ReasonCacheFull
//     naming the share, on its own Sync only: a repository the tenant asked for
//     lately is not given up for another of its own, so that its Syncs do not take
//     turns fetching. A tenant may always have one repository, however large,
//     within the cap;
//   - a fetch within its tenant's share that finds the cache full (tenants that
//     came first took more while they were fewer) makes room: the tenant's own
//     repositories that it no longer asks for go first (as above), then
//     repositories no tenant uses any more, then those of tenants over their
//     share, least recently used first, never a tenant's only repository nor one
//     in use at that moment. If that is not enough, the fetch stops with
//     ReasonCacheFull.

// cacheUsage is what the git cache takes on disk, by repository directory.
type cacheUsage struct {
	total int64
	// dirs by the base name of a repository's directory.
	dirs map[string]dirUsage
}

type dirUsage struct {
	bytes int64
	// packed says the repository holds a pack: a commit, not only the empty
	// repository a first fetch creates.
	packed  bool
	modTime time.Time
}

// measure walks the git cache, leaving out packs being written (fetches in
// flight count those themselves; see packCap).
func (d reposDir) measure() (cacheUsage, error) {
	root := string(d)
	u := cacheUsage{dirs: map[string]dirUsage{}}
	dirs, err := os.ReadDir(root)
	if err != nil {
		if os.IsNotExist(err) {
			return u, nil
		}
		return u, err
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		du, err := measureRepo(filepath.Join(root, d.Name()))
		if err != nil {
			return u, err
		}
		if info, err := d.Info(); err == nil {
			du.modTime = info.ModTime()
		}
		u.dirs[d.Name()] = du
		u.total += du.bytes
	}
	return u, nil
}

func measureRepo(dir string) (dirUsage, error) {
	var du dirUsage
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), partialPackPrefix) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		du.bytes += info.Size()
		du.packed = du.packed || strings.HasSuffix(d.Name(), ".pack")
		return nil
	})
	return du, err
}

// shares is the state of the cache's fair shares at one moment.
type shares struct {
	// limit is each tenant's share; 0 without a cap.
	limit int64
	// tenants is how many tenants share the cache.
	tenants int
	// taken is what each tenant takes (see the rule above).
	taken map[string]int64
	// repos counts, by tenant, the repositories holding a commit that it uses.
	repos map[string]int
	// users lists, by the base name of a repository's directory, its tenants.
	users map[string][]string
}

// sharesOf works out the shares from usage u, for a fetch by asker. The tenants
// counted are asker and those holding a repository with a commit: a namespace
// whose Syncs never fetched anything (a wrong URL) takes no share from the
// others. The caller holds s.mu.
func (c *Cache) sharesOf(u cacheUsage, now time.Time, asker string) shares {
	sh := shares{taken: map[string]int64{}, repos: map[string]int{}, users: map[string][]string{}}
	seen := map[string]bool{asker: true}
	for key, e := range c.repos {
		dir := filepath.Base(c.dir.of(key))
		users := e.activeTenants(now, c.opts.CacheIdle)
		sh.users[dir] = users
		du := u.dirs[dir]
		for _, t := range users {
			sh.taken[t] += du.bytes / int64(len(users))
			if du.packed {
				sh.repos[t]++
				seen[t] = true
			}
		}
	}
	sh.tenants = len(seen)
	if c.opts.MaxCacheBytes > 0 {
		sh.limit = c.opts.MaxCacheBytes / int64(max(1, sh.tenants))
	}
	return sh
}

// over reports whether tenant takes more than its share.
func (sh shares) over(tenant string) bool {
	return sh.limit > 0 && sh.taken[tenant] > sh.limit
}

// activeTenants lists the tenants that fetched the entry within idle. The caller
// holds Cache.mu.
func (e *repoEntry) activeTenants(now time.Time, idle time.Duration) []string {
	var out []string
	for t, at := range e.tenants {
		if now.Sub(at) < idle {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// usedBy records that tenant fetches the entry now.
func (c *Cache) usedBy(e *repoEntry, tenant string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.tenants == nil {
		e.tenants = map[string]time.Time{}
	}
	e.tenants[tenant] = c.now()
}

// reserve measures the cache before tenant fetches into url's repository, and
// returns the packCap the fetch writes under (nil without a cap): it fails with
// a cacheFullError when the tenant is already past its share, or when the cache
// is over its cap and no room can be made (see freeRoom).
func (c *Cache) reserve(url, tenant string) (*packCap, error) {
	if c.opts.MaxCacheBytes <= 0 {
		return nil, nil
	}
	key, dir := cacheKey(url), filepath.Base(c.dir.of(url))
	u, sh, err := c.sharesNow(tenant)
	if err != nil {
		return nil, err
	}
	if sh.bounds(tenant, u.dirs[dir]) && sh.over(tenant) && c.giveUpOwn(key, tenant, sh.taken[tenant]-sh.limit) > 0 {
		if u, sh, err = c.sharesNow(tenant); err != nil {
			return nil, err
		}
	}
	pc := &packCap{cache: c, key: key, tenant: tenant, used: u.total, limit: c.opts.MaxCacheBytes}
	if sh.bounds(tenant, u.dirs[dir]) {
		pc.share = &tenantShare{shares: sh, tenant: tenant, sharers: max(1, len(sh.users[dir])), keep: c.opts.CacheKeepRecent}
		if sh.over(tenant) {
			return nil, &cacheFullError{used: u.total, limit: c.opts.MaxCacheBytes, share: pc.share}
		}
	}
	if u.total > c.opts.MaxCacheBytes {
		pc.used -= c.freeRoom(pc.key, tenant, u.total-c.opts.MaxCacheBytes)
		if pc.used > c.opts.MaxCacheBytes {
			return nil, &cacheFullError{used: pc.used, limit: c.opts.MaxCacheBytes}
		}
	}
	return pc, nil
}

// sharesNow measures the cache and works out its shares for a fetch by tenant.
func (c *Cache) sharesNow(tenant string) (cacheUsage, shares, error) {
	u, err := c.dir.measure()
	if err != nil {
		return u, shares{}, fmt.Errorf("measuring the git cache: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return u, c.sharesOf(u, c.now(), tenant), nil
}

// bounds reports whether a fetch of tenant into a repository whose directory
// takes into is bounded by the tenant's share. Alone, a tenant's share is the
// cap; with others, a tenant may still have one repository of any size within
// the cap.
func (sh shares) bounds(tenant string, into dirUsage) bool {
	others := sh.repos[tenant]
	return sh.tenants > 1 && (others > 1 || (others == 1 && !into.packed))
}

// tenantShare bounds one fetch by its tenant's share of the cache.
type tenantShare struct {
	shares
	tenant string
	// sharers is how many tenants use the repository fetched into, the bytes
	// received being counted to each in equal parts.
	sharers int
	// keep is Options.CacheKeepRecent, for messages.
	keep time.Duration
}

// excess is how many bytes past its share written more bytes in the repository
// would take the tenant.
func (t *tenantShare) excess(written int64) int64 {
	return t.taken[t.tenant] + written/int64(t.sharers) - t.limit
}

// passedBy reports whether written more bytes in the repository would take the
// tenant past its share.
func (t *tenantShare) passedBy(written int64) bool {
	return t.excess(written) > 0
}

// gaveUp takes freed bytes, removed from the tenant's own repositories, off
// what it takes.
func (t *tenantShare) gaveUp(freed int64) {
	t.taken[t.tenant] -= freed
}

// makeRoom removes repositories from the cache until need bytes are free, for
// a fetch of tenant into the repository of key, and returns the bytes it
// removed. Only a tenant within its share makes room, and only at the expense
// of repositories no tenant uses (first), then of tenants all over their share
// (least recently used first); never a tenant's only repository, nor one in use
// (its lock held), nor the one being fetched into.
func (c *Cache) makeRoom(key, tenant string, need int64) int64 {
	u, err := c.dir.measure()
	if err != nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	sh := c.sharesOf(u, now, tenant)
	if sh.over(tenant) {
		return 0
	}
	entries := c.dir.byName(c.repos)
	self := filepath.Base(c.dir.of(key))
	type candidate struct {
		dir      string
		unused   bool
		lastUsed time.Time
	}
	var candidates []candidate
	for dir, du := range u.dirs {
		if dir == self || du.bytes == 0 {
			continue
		}
		k, ok := entries[dir]
		if !ok {
			candidates = append(candidates, candidate{dir: dir, unused: true, lastUsed: du.modTime})
			continue
		}
		candidates = append(candidates, candidate{dir: dir, unused: len(sh.users[dir]) == 0, lastUsed: c.repos[k].used})
	}
	slices.SortFunc(candidates, func(a, b candidate) int {
		if a.unused != b.unused {
			if a.unused {
				return -1
			}
			return 1
		}
		return a.lastUsed.Compare(b.lastUsed)
	})
	var freed int64
	for _, cand := range candidates {
		if freed >= need {
			break
		}
		if !cand.unused && !evictable(sh, sh.users[cand.dir]) {
			continue
		}
		if !c.evict(entries, cand.dir) {
			continue
		}
		bytes := u.dirs[cand.dir].bytes
		freed += bytes
		for _, t := range sh.users[cand.dir] {
			sh.taken[t] -= bytes / int64(len(sh.users[cand.dir]))
			if u.dirs[cand.dir].packed {
				sh.repos[t]--
			}
		}
	}
	return freed
}

// freeRoom removes repositories until need bytes are free in a cache over its
// cap, for a fetch of tenant into the repository of key, and returns the bytes
// it removed: first the tenant's own that it no longer asks for (giveUpOwn),
// so that it pays for itself before anyone else's repository goes, then those
// makeRoom may take.
func (c *Cache) freeRoom(key, tenant string, need int64) int64 {
	freed := c.giveUpOwn(key, tenant, need)
	if freed < need {
		freed += c.makeRoom(key, tenant, need-freed)
	}
	return freed
}

// giveUpOwn removes repositories of tenant's own (no other tenant uses them)
// that it has not asked for in Options.CacheKeepRecent, least recently asked
// first, until need bytes are free, for a fetch of tenant into the repository of
// key: never that one, nor one in use (its lock held). It returns the bytes it
// removed, all of them counted to tenant.
func (c *Cache) giveUpOwn(key, tenant string, need int64) int64 {
	u, err := c.dir.measure()
	if err != nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	sh := c.sharesOf(u, now, tenant)
	entries := c.dir.byName(c.repos)
	self := filepath.Base(c.dir.of(key))
	type candidate struct {
		dir   string
		asked time.Time
	}
	var candidates []candidate
	for dir, users := range sh.users {
		if dir == self || !u.dirs[dir].packed || !slices.Equal(users, []string{tenant}) {
			continue
		}
		asked := c.repos[entries[dir]].tenants[tenant]
		if now.Sub(asked) >= c.opts.CacheKeepRecent {
			candidates = append(candidates, candidate{dir: dir, asked: asked})
		}
	}
	slices.SortFunc(candidates, func(a, b candidate) int { return a.asked.Compare(b.asked) })
	var freed int64
	for _, cand := range candidates {
		if freed >= need {
			break
		}
		if c.evict(entries, cand.dir) {
			freed += u.dirs[cand.dir].bytes
		}
	}
	return freed
}

// byName maps the base name of each cache entry's directory to its key. The
// caller holds Cache.mu, which guards repos.
func (d reposDir) byName(repos map[string]*repoEntry) map[string]string {
	entries := map[string]string{}
	for k := range repos {
		entries[filepath.Base(d.of(k))] = k
	}
	return entries
}

// evictable reports whether a repository used by users may be removed to make
// room: each of them is over its share and keeps another repository.
func evictable(sh shares, users []string) bool {
	for _, t := range users {
		if !sh.over(t) || sh.repos[t] <= 1 {
			return false
		}
	}
	return true
}

// evict removes the repository in dir unless it is in use, and reports whether
// it did. Its entry stays, so that its tenants still count, and a later Fetch
// fetches it again (if their share allows). The caller holds s.mu.
func (c *Cache) evict(entries map[string]string, dir string) bool {
	key, ok := entries[dir]
	if !ok {
		return os.RemoveAll(filepath.Join(c.opts.CacheDir, "git", dir)) == nil
	}
	e := c.repos[key]
	if !e.mu.TryLock() {
		return false
	}
	defer e.mu.Unlock()
	e.listed = map[string]listing{}
	return c.discardCache(e, key) == nil
}

// tenantLabel names a tenant in messages.
func tenantLabel(tenant string) string {
	return cmp.Or(tenant, "(none)")
}
