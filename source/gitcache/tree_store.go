package gitcache

import (
	"fmt"
	"io"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// treeStore is what a treeCopier reads trees and files from: a commit's objects
// in the cache (gitStore), or a directory on disk (diskStore), so that the agent
// and `tether render` copy what a render reads by one algorithm, within the same
// bounds, into the same in-memory file system.
type treeStore interface {
	// entries reads the tree id and fails with errTooManyEntries past limit
	// entries, or with errMalformedTree.
	entries(id plumbing.Hash, limit int) ([]treeEntry, error)
	// size is the size in bytes of the file id.
	size(id plumbing.Hash) (int64, error)
	// open reads the file id: a regular file's content or a symlink's target.
	open(id plumbing.Hash) (io.ReadCloser, error)
}

var (
	_ treeStore = gitStore{}
	_ treeStore = (*diskStore)(nil)
)

// gitStore reads a commit's objects from a repository, and its trees through
// trees when that is set (the repository's treeCache).
type gitStore struct {
	repo  *git.Repository
	trees *treeCache
}

func (g gitStore) entries(id plumbing.Hash, limit int) ([]treeEntry, error) {
	if g.trees == nil {
		return g.read(id, limit)
	}
	if entries, ok := g.trees.get(id); ok {
		if len(entries) > limit {
			return nil, errTooManyEntries
		}
		return entries, nil
	}
	entries, err := g.read(id, limit)
	if err == nil {
		g.trees.put(id, entries)
	}
	return entries, err
}

func (g gitStore) read(id plumbing.Hash, limit int) ([]treeEntry, error) {
	obj, err := g.repo.Storer.EncodedObject(plumbing.TreeObject, id)
	if err != nil {
		return nil, fmt.Errorf("reading tree %s: %w", id, err)
	}
	r, err := obj.Reader()
	if err != nil {
		return nil, fmt.Errorf("reading tree %s: %w", id, err)
	}
	defer r.Close()
	return readTreeEntries(r, limit)
}

func (g gitStore) size(id plumbing.Hash) (int64, error) {
	return g.repo.Storer.EncodedObjectSize(id)
}

func (g gitStore) open(id plumbing.Hash) (io.ReadCloser, error) {
	blob, err := g.repo.BlobObject(id)
	if err != nil {
		return nil, err
	}
	return blob.Reader()
}
