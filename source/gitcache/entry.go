package gitcache

import (
	"context"
	gosync "sync"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
)

// repoEntry is what the cache holds of one repository, whatever the spelling
// of its URL: the repository opened from disk, what its remote last answered,
// and who asked for it when.
type repoEntry struct {
	// network is held by the one network conversation with the URL at a time.
	network chan struct{}
	// mu guards the fields below and the cache on disk; it is held during network
	// I/O only while a pack is being written into the cache.
	mu   gosync.Mutex
	repo *gogit.Repository
	// objects is repo's cache of decoded objects (see forgetObjects).
	objects cache.Object
	// trees keeps the trees renders of repo read, parsed (see treeCache).
	trees *treeCache
	// resolved remembers, by credentials and ref, the commit the remote last named
	// and when.
	resolved map[string]resolution
	// listed remembers, by credentials, the remote's last ref listing and when:
	// one listing answers every ref of the repository (see refs).
	listed map[string]listing
	// used is when a Fetch or a read of its commits last asked for the
	// entry; guarded by Cache.mu.
	used time.Time
	// tenants records, by tenant, when it last fetched the repository (its
	// share of the cache counts the repository; see share.go); guarded
	// by Cache.mu.
	tenants map[string]time.Time
}

// forgetObjects empties the cache of the entry's decoded objects. A render
// copies the files it reads (tree.go) and its result goes to the render
// cache, so once a tree is copied, the blobs, trees and delta bases it decoded
// serve only a later read of the same objects; held, they stay in the agent's
// heap while the revision is applied (up to repoObjectCache a repository, ~0.8
// MiB of anonymous memory at a path of 1,000 objects). The next render of
// another path of the same commit (a fleet of Syncs on one repository) decodes
// the commit and the blobs' delta bases again from the pack; the trees on the way
// to its directory it finds parsed in e.trees, which is not cleared. Callers hold
// e.mu.
func (e *repoEntry) forgetObjects() {
	if e.objects != nil {
		e.objects.Clear()
	}
}

type resolution struct {
	commit string
	// tag is the tag a semver range resolved to.
	tag string
	// tagObject is the annotated tag object the ref names, if it names one:
	// a tag's signature is in it.
	tagObject string
	at        time.Time
}

// cachedIn reports whether repo holds what the resolution names: the commit,
// and the annotated tag object if there is one.
func (r resolution) cachedIn(repo *gogit.Repository) bool {
	if !hasCommit(repo, r.commit) {
		return false
	}
	if r.tagObject == "" {
		return true
	}
	_, err := repo.Storer.EncodedObject(plumbing.TagObject, plumbing.NewHash(r.tagObject))
	return err == nil
}

// revision completes rev with what the resolution found.
func (r resolution) revision(rev Revision) Revision {
	rev.Commit = r.commit
	rev.TagObject = r.tagObject
	if r.tag != "" {
		rev.Ref = r.tag
	}
	return rev
}

// lockNetwork waits at most wait for the URL's network conversation to be free,
// and takes it.
func (e *repoEntry) lockNetwork(ctx context.Context, wait time.Duration) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case e.network <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

func (e *repoEntry) unlockNetwork() { <-e.network }

// entry returns the lockable cache entry of one URL, shared by every spelling of
// it that cacheKey deems the same, and marks it used.
func (c *Cache) entry(url string) *repoEntry {
	key := cacheKey(url)
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.repos[key]
	if !ok {
		e = &repoEntry{network: make(chan struct{}, 1), resolved: map[string]resolution{}, listed: map[string]listing{}}
		c.repos[key] = e
	}
	e.used = c.now()
	return e
}
