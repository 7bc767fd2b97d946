package gitcache

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/storage/filesystem"
)

// cacheKey reduces a repository URL to what names one cache: credentials, a
// trailing ".git" or "/" and the case of the scheme and host do not matter, so
// that every spelling of one repository shares one cache entry and directory.
// Scheme, host and port do matter: a fetch into the cache uses its caller's URL
// and credentials, which must never be sent to another server.
func cacheKey(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil || u.Host == "" {
		return strings.TrimSuffix(strings.TrimSuffix(raw, "/"), ".git") // scp-like or file
	}
	p := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), ".git")
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + p
}

// cacheFullError is the git cache over its cap, or a tenant over its share of
// it (share set): before a fetch, or during one, stopped after fetched bytes.
type cacheFullError struct {
	used, limit, fetched int64
	share                *tenantShare
}

func (e *cacheFullError) Error() string {
	if t := e.share; t != nil {
		taken := fmt.Sprintf("namespace %s's repositories take %d bytes of the git cache", tenantLabel(t.tenant), t.taken[t.tenant])
		share := fmt.Sprintf("its share of %d bytes (the agent's limit of %d shared by the %d namespaces that use the cache)", t.limit, e.limit, t.tenants)
		kept := fmt.Sprintf("the repositories it asked for within the last %s are kept", t.keep)
		if e.fetched > 0 {
			return fmt.Sprintf("the fetch was stopped after %d bytes: %s, and with it they would pass %s; %s, so this one "+
				"is left out of the cache, and nothing of other namespaces was evicted or refused", e.fetched, taken, share, kept)
		}
		return fmt.Sprintf("%s, over %s; %s, so nothing new is fetched for it until its Syncs use fewer repositories or the limit is raised", taken, share, kept)
	}
	if e.fetched > 0 {
		return fmt.Sprintf("the fetch was stopped after %d bytes: with the %d bytes the git cache takes it would pass the agent's limit of %d, "+
			"and no repository could be removed to make room (of its namespace's, only those not asked for lately; of others, only those of namespaces over their share); it is left out of the cache", e.fetched, e.used, e.limit)
	}
	return fmt.Sprintf("the git cache takes %d bytes, over the agent's limit of %d, and no repository could be removed to make room "+
		"(of its namespace's, only those not asked for lately; of others, only those of namespaces over their share): "+
		"nothing new is fetched until repositories no Sync uses are removed or the limit is raised", e.used, e.limit)
}

// packCap enforces Options.MaxCacheBytes and the fetching tenant's share of it
// while a pack is received: the bytes every fetch in flight has written count
// against the cap with what the cache took when this one started, and the
// write that would pass the cap, or the tenant's share, fails the fetch that
// made it, unless room can be made (see giveUpOwn and freeRoom). Its partial pack is then
// removed (removePartialPacks), so that the one fetch that did not fit is the
// only one refused.
type packCap struct {
	cache *Cache
	// key is the cache key of the repository fetched into, tenant who fetches.
	key, tenant string
	// used is what the cache took at the start, less what was removed since to
	// make room for this fetch; limit is Options.MaxCacheBytes.
	used, limit int64
	// share bounds the fetch by its tenant's share; nil when the repository is
	// the tenant's only one.
	share   *tenantShare
	written int64
}

func (c *packCap) add(n int) error {
	c.written += int64(n)
	inFlight := c.cache.receiving.Add(int64(n))
	if c.share != nil && c.share.passedBy(c.written) {
		freed := c.cache.giveUpOwn(c.key, c.tenant, c.share.excess(c.written))
		c.share.gaveUp(freed)
		c.used -= freed
		if c.share.passedBy(c.written) {
			return &cacheFullError{used: c.used, limit: c.limit, fetched: c.written, share: c.share}
		}
	}
	if c.used+inFlight > c.limit {
		c.used -= c.cache.freeRoom(c.key, c.tenant, c.used+inFlight-c.limit)
		if c.used+inFlight > c.limit {
			return &cacheFullError{used: c.used, limit: c.limit, fetched: c.written}
		}
	}
	return nil
}

// done takes the fetch's bytes off the count of those in flight: they are in
// the cache now, or removed.
func (c *packCap) done() {
	if c != nil {
		c.cache.receiving.Add(-c.written)
	}
}

// cappedStorage is a cache's storage whose packs are written under a packCap.
type cappedStorage struct {
	*filesystem.Storage
	cap *packCap
}

func (c cappedStorage) PackfileWriter() (io.WriteCloser, error) {
	w, err := c.Storage.PackfileWriter()
	if err != nil {
		return nil, err
	}
	return &cappedWriter{WriteCloser: w, cap: c.cap}, nil
}

type cappedWriter struct {
	io.WriteCloser
	cap *packCap
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	if err := w.cap.add(len(p)); err != nil {
		return 0, err
	}
	return w.WriteCloser.Write(p)
}

// partialPackPrefix names the temporary files go-git writes a pack into; a
// failed fetch leaves them behind.
const partialPackPrefix = "tmp_pack_"

// removePartialPacks removes what a failed fetch left of its pack in the cache
// at dir. The caller holds the entry's lock, so no other fetch writes there.
func removePartialPacks(dir string) {
	packs := filepath.Join(dir, "objects", "pack")
	entries, err := os.ReadDir(packs)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), partialPackPrefix) {
			_ = os.Remove(filepath.Join(packs, e.Name()))
		}
	}
}

func dirSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), partialPackPrefix) {
			info, err := d.Info()
			if err != nil {
				return nil // removed meanwhile
			}
			total += info.Size()
		}
		return nil
	})
	return total, err
}

// sweep removes, at most every tenth of Options.CacheIdle, the cached
// repositories that no Fetch nor read of their commits (Tree, Glob, ...) has
// asked for in Options.CacheIdle: from memory, and from disk, including
// directories a previous run of the agent left.
func (c *Cache) sweep() {
	now := c.now()
	c.mu.Lock()
	if now.Sub(c.swept) < c.opts.CacheIdle/10 {
		c.mu.Unlock()
		return
	}
	c.swept = now
	keep := map[string]bool{}
	for key, e := range c.repos {
		// An entry someone holds is in use, whatever its age. Removing the
		// directory under c.mu keeps a new entry of the same URL from opening it
		// meanwhile.
		if now.Sub(e.used) < c.opts.CacheIdle || !e.mu.TryLock() {
			keep[filepath.Base(c.dir.of(key))] = true
			continue
		}
		if err := c.discardCache(e, key); err != nil {
			keep[filepath.Base(c.dir.of(key))] = true // retried at the next sweep
		} else {
			delete(c.repos, key)
		}
		e.mu.Unlock()
	}
	c.mu.Unlock()
	c.removeStrayDirs(keep, now)
}

// removeStrayDirs removes directories of the git cache that no entry in use
// names and that have not changed in Options.CacheIdle: those of repositories an
// earlier run of the agent fetched. The start of this run counts as a use of
// each: a directory's time says little of its last use (a fetch into a
// repository writes below it), and an agent restarted while git is down renders
// what it applied before from them (see sync's Options.LastGoodDir).
func (c *Cache) removeStrayDirs(keep map[string]bool, now time.Time) {
	if now.Sub(c.started) < c.opts.CacheIdle {
		return
	}
	root := filepath.Join(c.opts.CacheDir, "git")
	dirs, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, d := range dirs {
		info, err := d.Info()
		if err != nil || keep[d.Name()] || now.Sub(info.ModTime()) < c.opts.CacheIdle {
			continue
		}
		_ = os.RemoveAll(filepath.Join(root, d.Name()))
	}
}
