package source

import (
	"errors"
	"fmt"
	"io/fs"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
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

// checkCacheRoom fails with ReasonCacheFull when the git cache takes more than
// Options.MaxCacheBytes: a Fetch that would write to it waits until idle
// repositories are removed or the cap is raised, and nothing is evicted.
func (s *Source) checkCacheRoom() error {
	if s.opts.MaxCacheBytes <= 0 {
		return nil
	}
	used, err := dirSize(filepath.Join(s.opts.CacheDir, "git"))
	if err != nil {
		return fmt.Errorf("measuring the git cache: %w", err)
	}
	if used > s.opts.MaxCacheBytes {
		return &cacheFullError{used: used, limit: s.opts.MaxCacheBytes}
	}
	return nil
}

type cacheFullError struct{ used, limit int64 }

func (e *cacheFullError) Error() string {
	return fmt.Sprintf("the git cache takes %d bytes, over the agent's limit of %d: nothing new is fetched until repositories no Sync uses are removed or the limit is raised", e.used, e.limit)
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
		if d.Type().IsRegular() {
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
// repositories no Fetch or Render has asked for in Options.CacheIdle: from
// memory, and from disk, including directories a previous run of the agent left.
func (s *Source) sweep() {
	now := s.now()
	s.mu.Lock()
	if now.Sub(s.swept) < s.opts.CacheIdle/10 {
		s.mu.Unlock()
		return
	}
	s.swept = now
	keep := map[string]bool{}
	for key, e := range s.repos {
		// An entry someone holds is in use, whatever its age. Removing the
		// directory under s.mu keeps a new entry of the same URL from opening it
		// meanwhile.
		if now.Sub(e.used) < s.opts.CacheIdle || !e.mu.TryLock() {
			keep[filepath.Base(s.cacheDir(key))] = true
			continue
		}
		if err := s.discardCache(e, key); err != nil {
			keep[filepath.Base(s.cacheDir(key))] = true // retried at the next sweep
		} else {
			delete(s.repos, key)
		}
		e.mu.Unlock()
	}
	s.mu.Unlock()
	s.removeStrayDirs(keep, now)
}

// removeStrayDirs removes directories of the git cache that no entry in use
// names and that have not changed in Options.CacheIdle: those of repositories an
// earlier run of the agent fetched.
func (s *Source) removeStrayDirs(keep map[string]bool, now time.Time) {
	root := filepath.Join(s.opts.CacheDir, "git")
	dirs, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, d := range dirs {
		info, err := d.Info()
		if err != nil || keep[d.Name()] || now.Sub(info.ModTime()) < s.opts.CacheIdle {
			continue
		}
		_ = os.RemoveAll(filepath.Join(root, d.Name()))
	}
}
