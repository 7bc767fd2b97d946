package gitcache

import (
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"tether.dev/tether/source/render"
)

// Copier copies what rendering a directory reads out of a tree the cache does
// not hold: a local clone's commit (source.Checkout, `tether preview`) or a
// directory on disk (source.RenderDirectory, `tether render`). It is the
// cache's own copier (tree.go), so that the CLI reads what the agent reads,
// by one algorithm and within the same bounds.
type Copier struct {
	c *treeCopier
}

// NewCommitCopier copies from tree, the root tree of a commit of repo.
func NewCommitCopier(repo *gogit.Repository, tree plumbing.Hash, b TreeBounds) *Copier {
	return &Copier{c: newTreeCopier(gitStore{repo: repo}, tree, b)}
}

// NewDiskCopier copies from root, a directory on disk read as a tree: a .git
// entry is never read, and a symlink is read as its target inside root.
func NewDiskCopier(root string, b TreeBounds) *Copier {
	store := &diskStore{paths: map[plumbing.Hash]string{}}
	return &Copier{c: newTreeCopier(store, store.id(root), b)}
}

// CopyFor copies dir (relative to the root) and every kustomization root it
// reaches.
func (c *Copier) CopyFor(dir string) error { return c.c.copyFor(dir) }

// Check fails with the first file under dir (in path order) that was left
// out: over a bound, or a link leaving the tree.
func (c *Copier) Check(dir string) error { return c.c.check(dir) }

// FS is the in-memory file system the copied files are in, rooted at "/".
func (c *Copier) FS() *render.FS { return c.c.fs }
