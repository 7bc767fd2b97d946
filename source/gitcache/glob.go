package gitcache

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"tether.dev/tether/api/v1alpha1"
)

// MaxGlobMatches is the most paths one Glob returns; a SyncSet's generators
// yield at most a few thousand Syncs.
const MaxGlobMatches = 10000

// GlobKind says what a Glob lists.
type GlobKind int

const (
	// GlobDirectories lists directories.
	GlobDirectories GlobKind = iota
	// GlobFiles lists regular files and symlinks.
	GlobFiles
)

// Glob lists the paths of the fetched commit rev that pattern matches, sorted;
// each part of pattern ("apps/*", "clusters/*/config.yaml") is matched against
// the names of one level of the tree as path.Match does ("**" is no special
// case). Only the trees on the way are read, within TreeBounds.MaxTreeEntries, as
// a render reads them: a SyncSet over a monorepo lists the repository the agent
// already holds for its Syncs, with no request to the git host.
func (c *Cache) Glob(rev Revision, pattern string, kind GlobKind) ([]string, error) {
	clean, err := CleanPath(pattern)
	if err != nil {
		return nil, err
	}
	if _, err := path.Match(clean, ""); err != nil {
		return nil, &RenderError{File: pattern, Err: fmt.Errorf("glob: %w", err)}
	}
	var out []string
	err = c.withTree(rev, func(c *treeCopier) error {
		out, err = c.glob(clean, kind)
		return err
	})
	return out, err
}

// ReadFiles reads files of the fetched commit rev (as Glob named them), each
// within TreeBounds.MaxFileSize and all within TreeBounds.MaxTreeSize; a symlink is
// read as its target when that lies inside the repository.
func (c *Cache) ReadFiles(rev Revision, paths []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(paths))
	err := c.withTree(rev, func(c *treeCopier) error {
		for _, p := range paths {
			if err := c.copyFile(p); err != nil {
				return err
			}
			if re, refused := c.refused[p]; refused {
				return re
			}
			data, err := c.fs.ReadFile("/" + p)
			if err != nil {
				return &RenderError{File: p, Err: fmt.Errorf("not a file of %s", rev.Commit)}
			}
			out[p] = data
		}
		return nil
	})
	return out, err
}

// withTree runs f with a treeCopier over the commit of rev, holding the
// repository's lock as a render does.
func (c *Cache) withTree(rev Revision, f func(*treeCopier) error) error {
	e := c.entry(rev.URL)
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.forgetObjects()
	repo, err := c.openCache(e, rev.URL)
	if err != nil {
		return &FetchError{URL: rev.URL, Ref: rev.Ref, Reason: v1alpha1.ReasonCacheUnreadable, Err: err}
	}
	commit, err := repo.CommitObject(plumbing.NewHash(rev.Commit))
	if err != nil {
		return &FetchError{URL: rev.URL, Ref: rev.Ref, Reason: v1alpha1.ReasonCommitNotFound, Err: fmt.Errorf("reading commit %s: %w", rev.Commit, err)}
	}
	tc := newTreeCopier(gitStore{repo: repo, trees: e.trees}, commit.TreeHash, c.opts.TreeBounds)
	if err := f(tc); err != nil {
		return c.unreadable(e, rev, err)
	}
	return nil
}

// glob walks pattern one part at a time from the root.
func (c *treeCopier) glob(pattern string, kind GlobKind) ([]string, error) {
	type level struct {
		dir string
		id  plumbing.Hash
	}
	frontier := []level{{".", c.root}}
	parts := strings.Split(pattern, "/")
	var out []string
	for i, part := range parts {
		last := i == len(parts)-1
		var next []level
		for _, l := range frontier {
			entries, fresh, err := c.list(l.id, l.dir)
			if err != nil {
				return nil, err
			}
			if fresh {
				if err := c.charge(len(entries), l.dir); err != nil {
					return nil, err
				}
			}
			for _, e := range entries {
				if ok, _ := path.Match(part, e.name); !ok {
					continue
				}
				p := joinPath(l.dir, e.name)
				switch {
				case !last && e.kind == entryTree:
					next = append(next, level{p, e.hash})
				case last && kind == GlobDirectories && e.kind == entryTree,
					last && kind == GlobFiles && (e.kind == entryFile || e.kind == entrySymlink):
					out = append(out, p)
				}
				if len(out) > MaxGlobMatches {
					return nil, &RenderError{File: pattern, Reason: v1alpha1.ReasonRenderLimitExceeded, Err: fmt.Errorf("more than %d matches", MaxGlobMatches)}
				}
			}
		}
		frontier = next
	}
	sort.Strings(out)
	return out, nil
}
