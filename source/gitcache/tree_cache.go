package gitcache

import (
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing"
)

// treeCacheBytes bounds each of the two generations of a repository's treeCache:
// a directory of 10,000 entries with names of 50 bytes fits, and a repository
// holds at most twice this, however many Syncs render it.
const treeCacheBytes = 1 << 20

// treeCache keeps the trees a repository's renders read, parsed, by id. A fleet of
// Syncs on one repository renders as many paths of one commit, and each render
// reads the trees on the way from the root to its directory: without the cache
// every render read and parsed the root tree again (one Sync per directory of a
// monorepo made that quadratic: 1,000 Syncs, a root of 1,000 entries, a million
// entries parsed for one commit). A tree is immutable under its id, so an entry
// never goes stale; the cache is bounded by bytes, in two generations (a tree
// used again moves to the newer, the older is dropped when the newer fills).
// Callers hold the repoEntry's mu; the slices it returns are shared and must not
// be changed.
type treeCache struct {
	recent, older map[plumbing.Hash][]treeEntry
	bytes         int
}

func newTreeCache() *treeCache {
	return &treeCache{recent: map[plumbing.Hash][]treeEntry{}}
}

func (t *treeCache) get(id plumbing.Hash) ([]treeEntry, bool) {
	if entries, ok := t.recent[id]; ok {
		return entries, true
	}
	entries, ok := t.older[id]
	if ok {
		delete(t.older, id)
		t.put(id, entries)
	}
	return entries, ok
}

func (t *treeCache) put(id plumbing.Hash, entries []treeEntry) {
	n := treeBytes(entries)
	if n > treeCacheBytes {
		return
	}
	if t.bytes+n > treeCacheBytes {
		t.older, t.recent, t.bytes = t.recent, map[plumbing.Hash][]treeEntry{}, 0
	}
	t.recent[id] = entries
	t.bytes += n
}

// treeBytes is about what entries take in memory.
func treeBytes(entries []treeEntry) int {
	n := len(entries) * int(unsafe.Sizeof(treeEntry{}))
	for _, e := range entries {
		n += len(e.name)
	}
	return n
}
