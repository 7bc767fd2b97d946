package source

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"tether.dev/tether/source/wall"
)

// RenderDirectory renders dir, a directory on disk, the way the agent renders
// the same directory of a commit: the files rendering needs (dir and every
// kustomization root it reaches) are copied into memory by the same copier,
// within the same bounds of opts (MaxFileSize, MaxTreeSize, MaxTreeEntries, the
// YAML node budgets, MaxObjects, MaxRenderedBytes), and rendered by the same
// function. `tether render` and `tether diff` call it, so that what they print is
// what the agent applies. A dir holding a Chart.yaml renders as a Helm chart as
// helm says, with its Capabilities read once.
//
// The repository is the git work tree holding dir (the nearest directory above
// it with a .git entry, which is never copied); outside one, the current
// directory if it holds dir, else dir itself. As in a commit, a kustomization
// may reach anything inside the repository and nothing outside it, a symlink is
// read as its target inside the repository, and errors name files relative to
// the repository's root.
func RenderDirectory(ctx context.Context, dir string, helm Helm, opts Options) ([]*unstructured.Unstructured, error) {
	return RenderDirectoryDecrypted(ctx, dir, helm, opts, nil)
}

// RenderDirectoryDecrypted is RenderDirectory decrypting the SOPS files the
// render reads with dec, as the agent does (`tether render --decrypt`).
func RenderDirectoryDecrypted(ctx context.Context, dir string, helm Helm, opts Options, dec *Decryption) ([]*unstructured.Unstructured, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if info, err := os.Stat(abs); err != nil || !info.IsDir() {
		return nil, &RenderError{File: dir, Err: errors.New("no such directory")}
	}
	root := repositoryRoot(abs)
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return nil, err
	}
	rel = filepath.ToSlash(rel)
	store := &diskStore{paths: map[plumbing.Hash]string{}}
	c := newTreeCopier(store, store.id(root), opts)
	if err := c.copyFor(rel); err != nil {
		return nil, err
	}
	if err := c.check(rel); err != nil {
		return nil, err
	}
	return wall.RenderFS(ctx, c.fs, rel, Directory{}, helm, opts.renderOptions(), dec)
}

// repositoryRoot is the root RenderDirectory reads dir (absolute) in.
func repositoryRoot(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	if cwd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(cwd, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return cwd
		}
	}
	return dir
}

// diskStore reads a directory on disk as a treeStore: each directory and file it
// lists gets an id of its own. A .git entry is never listed.
type diskStore struct {
	paths map[plumbing.Hash]string
	next  uint64
}

func (d *diskStore) id(p string) plumbing.Hash {
	d.next++
	var h plumbing.Hash
	binary.BigEndian.PutUint64(h[len(h)-8:], d.next)
	d.paths[h] = p
	return h
}

func (d *diskStore) path(id plumbing.Hash) (string, error) {
	p, ok := d.paths[id]
	if !ok {
		return "", fmt.Errorf("no file %s", id)
	}
	return p, nil
}

func (d *diskStore) entries(id plumbing.Hash, limit int) ([]treeEntry, error) {
	dir, err := d.path(id)
	if err != nil {
		return nil, err
	}
	list, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]treeEntry, 0, len(list))
	for _, e := range list {
		if e.Name() == ".git" {
			continue
		}
		if len(out) == limit {
			return nil, errTooManyEntries
		}
		out = append(out, treeEntry{name: e.Name(), kind: diskKind(e.Type()), hash: d.id(filepath.Join(dir, e.Name()))})
	}
	return out, nil
}

func diskKind(t fs.FileMode) int {
	switch {
	case t.IsDir():
		return entryTree
	case t&fs.ModeSymlink != 0:
		return entrySymlink
	case t.IsRegular():
		return entryFile
	}
	return entryOther
}

func (d *diskStore) size(id plumbing.Hash) (int64, error) {
	p, err := d.path(id)
	if err != nil {
		return 0, err
	}
	info, err := os.Lstat(p)
	if err != nil {
		return 0, err
	}
	return info.Size(), nil
}

// open reads a file, or a symlink's target as git stores it.
func (d *diskStore) open(id plumbing.Hash) (io.ReadCloser, error) {
	p, err := d.path(id)
	if err != nil {
		return nil, err
	}
	info, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(p)
		if err != nil {
			return nil, err
		}
		return io.NopCloser(strings.NewReader(target)), nil
	}
	return os.Open(p)
}
