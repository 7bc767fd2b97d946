package gitcache

import (
	"context"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/git"
)

// listing is one answer of a remote to a ref listing: every branch and tag, with
// peeled tags, as one set of credentials saw them.
type listing struct {
	refs []*plumbing.Reference
	at   time.Time
}

// refs returns the remote's refs as r's credentials see them: a listing made
// with the same credentials at most maxAge ago, whatever ref it was made for, or
// else a new one. One listing names every ref, so the Syncs of a monorepo that
// follow different branches, tags or semver ranges still cost the host one
// listing per interval. A listing is never shared across credentials (a caller
// without access must be refused by the remote itself), and a failed one is not
// kept. The caller holds the entry's network lock, so a repository has one
// listing running at a time, and callers that waited for it share it.
func (c *Cache) refs(ctx context.Context, e *repoEntry, r *git.Remote, maxAge time.Duration) ([]*plumbing.Reference, time.Time, error) {
	e.mu.Lock()
	l, ok := e.listed[r.Key]
	e.mu.Unlock()
	if ok && fresh(c.now(), l.at, maxAge) {
		return l.refs, l.at, nil
	}
	asked := c.now()
	refs, err := c.listRefs(ctx, r)
	if err != nil {
		return nil, time.Time{}, err
	}
	e.mu.Lock()
	e.listed[r.Key] = listing{refs: refs, at: asked}
	e.mu.Unlock()
	return refs, asked, nil
}

// fromListing resolves ref from a listing made with r's credentials younger than
// maxAge, if there is one: for a pinned commit the listing only proves that
// these credentials may read the repository. The caller holds e.mu and checks
// that the commit is cached.
func (c *Cache) fromListing(e *repoEntry, r *git.Remote, ref v1alpha1.GitRef, maxAge time.Duration) (resolution, bool) {
	l, ok := e.listed[r.Key]
	if !ok || !fresh(c.now(), l.at, maxAge) {
		return resolution{}, false
	}
	if ref.Commit != "" {
		return resolution{commit: ref.Commit, at: l.at}, true
	}
	res, _, _, err := pick(l.refs, ref)
	if err != nil {
		return resolution{}, false // the slow path reports it
	}
	res.at = l.at
	return res, true
}

// fresh reports whether something learnt from the remote at at may still be
// used, now, by a caller that accepts answers up to maxAge old. A maxAge of
// zero always asks.
func fresh(now, at time.Time, maxAge time.Duration) bool {
	return maxAge > 0 && now.Sub(at) < maxAge
}
