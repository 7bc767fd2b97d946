package source

import (
	"errors"
	"fmt"

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
func (s *Source) Descends(url, from, to string) (bool, error) {
	if from == to {
		return true, nil
	}
	e := s.entry(url)
	e.mu.Lock()
	defer e.mu.Unlock()
	repo, err := s.openCache(e, url)
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
	ok, err := old.IsAncestor(cur)
	if err != nil {
		// A parent missing from the cache (a shallow history) leaves the answer open.
		return false, fmt.Errorf("%w: walking the history of %s: %w", ErrHistoryUnknown, to, err)
	}
	return ok, nil
}
