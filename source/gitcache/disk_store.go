package gitcache

import (
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

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
