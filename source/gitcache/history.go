package gitcache

import (
	"errors"
	"fmt"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// ErrHistoryUnknown is returned by Descends when the cache cannot tell: one of the
// commits is not in it (an agent whose cache was lost with its pod).
var ErrHistoryUnknown = errors.New("commit not in the cache")

// Descends reports whether commit to has commit from in its history (a commit
// descends from itself): whether a ref that moved from one to the other moved
// forward, as pushes move branches, rather than being rewound or rewritten by a
// force-push. Both commits must be in url's cache; else the answer is
// ErrHistoryUnknown. The walk reads only the cache.
func (c *Cache) Descends(url, from, to string) (bool, error) {
	if from == to {
		return true, nil
	}
	e := c.entry(url)
	e.mu.Lock()
	defer e.mu.Unlock()
	repo, err := c.openCache(e, url)
	if err != nil {
		return false, err
	}
	old, err := repo.CommitObject(plumbing.NewHash(from))
	if err != nil {
		return false, fmt.Errorf("%w: %s", ErrHistoryUnknown, from)
	}
	cur, err := repo.CommitObject(plumbing.NewHash(to))
	if err != nil {
		return false, fmt.Errorf("%w: %s", ErrHistoryUnknown, to)
	}
	ok, err := reaches(repo, cur.Hash, old.Hash, isShallow(repo))
	if err != nil {
		// A parent missing from a cache that is not shallow leaves the answer open.
		return false, fmt.Errorf("%w: walking the history of %s: %w", ErrHistoryUnknown, to, err)
	}
	return ok, nil
}

// reaches walks the history of commit to and reports whether it meets from.
//
// In a shallow cache (its first fetch took one commit) a commit missing from
// the walk ends that path: the cache holds every commit between each one it
// holds and where its history starts, because each fetch after the first took
// what the remote had beyond the commits the cache held. A missing commit is
// thus one the remote took the cache to have, below where its history starts,
// and from (which the cache holds) cannot be above it. In a full cache a
// missing commit is damage, and the answer is an error.
func reaches(repo *gogit.Repository, to, from plumbing.Hash, shallow bool) (bool, error) {
	seen := map[plumbing.Hash]bool{to: true}
	queue := []plumbing.Hash{to}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if h == from {
			return true, nil
		}
		c, err := repo.CommitObject(h)
		if err != nil {
			if shallow && errors.Is(err, plumbing.ErrObjectNotFound) {
				continue
			}
			return false, err
		}
		for _, p := range c.ParentHashes {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return false, nil
}
