package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// FS is the in-memory file system a render reads: the files of a commit (or
// of a directory on disk) that rendering needs, copied in, rooted at "/".
//
// kyaml's own in-memory file system refuses to create a file whose name holds
// anything outside [a-zA-Z0-9-_.:], so one "notes copy.txt", "logo@2x.png" or
// "café.md" in a repository failed a render that git, kubectl and kustomize on
// disk all accept. FS takes any name git can hold (no "/" and no NUL in a
// component, never "." or ".."). It is not safe for concurrent writes; a render
// only reads it.
type FS struct {
	files map[string][]byte
	// dirs holds every directory with the names of its entries.
	dirs map[string]map[string]bool
}

var _ filesys.FileSystem = (*FS)(nil)

// NewFS returns an empty file system holding only its root.
func NewFS() *FS {
	return &FS{files: map[string][]byte{}, dirs: map[string]map[string]bool{"/": {}}}
}

// clean makes p absolute and clean, as kyaml's in-memory file system reads a
// relative path from its root.
func (m *FS) clean(p string) string {
	return filepath.Join("/", p)
}

func (m *FS) addDir(p string) error {
	if _, ok := m.files[p]; ok {
		return fmt.Errorf("%s: not a directory", p)
	}
	if m.dirs[p] != nil {
		return nil
	}
	parent := filepath.Dir(p)
	if err := m.addDir(parent); err != nil {
		return err
	}
	m.dirs[parent][filepath.Base(p)] = true
	m.dirs[p] = map[string]bool{}
	return nil
}

// WriteFile writes data to p, making its directories.
func (m *FS) WriteFile(p string, data []byte) error {
	p = m.clean(p)
	if p == "/" || m.dirs[p] != nil {
		return fmt.Errorf("%s: is a directory", p)
	}
	if err := m.addDir(filepath.Dir(p)); err != nil {
		return err
	}
	m.dirs[filepath.Dir(p)][filepath.Base(p)] = true
	m.files[p] = data
	return nil
}

// Create makes an empty file at p, which the file returned writes.
func (m *FS) Create(p string) (filesys.File, error) {
	if err := m.WriteFile(p, nil); err != nil {
		return nil, err
	}
	return &memFile{fs: m, path: m.clean(p), writable: true}, nil
}

// Mkdir makes the directory p and those above it, as MkdirAll does.
func (m *FS) Mkdir(p string) error { return m.addDir(m.clean(p)) }

// MkdirAll makes the directory p and those above it.
func (m *FS) MkdirAll(p string) error { return m.addDir(m.clean(p)) }

// RemoveAll removes p and everything below it; never the root.
func (m *FS) RemoveAll(p string) error {
	p = m.clean(p)
	if p == "/" {
		return errors.New("refusing to remove the root")
	}
	prefix := p + "/"
	for f := range m.files {
		if f == p || strings.HasPrefix(f, prefix) {
			delete(m.files, f)
		}
	}
	for d := range m.dirs {
		if d == p || strings.HasPrefix(d, prefix) {
			delete(m.dirs, d)
		}
	}
	if parent := m.dirs[filepath.Dir(p)]; parent != nil {
		delete(parent, filepath.Base(p))
	}
	return nil
}

// Open opens the file or directory p for reading.
func (m *FS) Open(p string) (filesys.File, error) {
	p = m.clean(p)
	if !m.Exists(p) {
		return nil, notExist(p)
	}
	return &memFile{fs: m, path: p}, nil
}

// IsDir reports whether p is a directory.
func (m *FS) IsDir(p string) bool { return m.dirs[m.clean(p)] != nil }

// Exists reports whether p is a file or a directory.
func (m *FS) Exists(p string) bool {
	p = m.clean(p)
	_, file := m.files[p]
	return file || m.dirs[p] != nil
}

// ReadDir lists the names of p's entries.
func (m *FS) ReadDir(p string) ([]string, error) {
	p = m.clean(p)
	entries := m.dirs[p]
	if entries == nil {
		if _, ok := m.files[p]; ok {
			return nil, fmt.Errorf("%s is not a directory", p)
		}
		return nil, notExist(p)
	}
	return slices.Sorted(maps.Keys(entries)), nil
}

// CleanedAbs splits p into its directory and file name, or returns p itself
// with no name when p is a directory. Nothing in memory is a symlink.
func (m *FS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	c := m.clean(p)
	if m.dirs[c] != nil {
		return filesys.ConfirmedDir(c), "", nil
	}
	if _, ok := m.files[c]; ok {
		return filesys.ConfirmedDir(filepath.Dir(c)), filepath.Base(c), nil
	}
	return "", "", notExist(p)
}

// Glob matches files (never directories) with filepath.Match, leaving out
// hidden files unless the pattern names one, as kyaml's file systems do.
func (m *FS) Glob(pattern string) ([]string, error) {
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, err
	}
	var out []string
	for f := range m.files {
		if ok, _ := filepath.Match(pattern, f); ok {
			out = append(out, f)
		}
	}
	if !filesys.IsHiddenFilePath(pattern) {
		out = filesys.RemoveHiddenFiles(out)
	}
	sort.Strings(out)
	return out, nil
}

// ReadFile returns the content of the file p.
func (m *FS) ReadFile(p string) ([]byte, error) {
	c := m.clean(p)
	data, ok := m.files[c]
	if !ok {
		if m.dirs[c] != nil {
			return nil, fmt.Errorf("%s: is a directory", p)
		}
		return nil, notExist(p)
	}
	return data, nil
}

// Walk visits p and everything below it in lexical order, as filepath.Walk.
func (m *FS) Walk(p string, walkFn filepath.WalkFunc) error {
	c := m.clean(p)
	if !m.Exists(c) {
		return notExist(p)
	}
	err := m.walk(c, walkFn)
	if errors.Is(err, filepath.SkipDir) || errors.Is(err, filepath.SkipAll) {
		return nil
	}
	return err
}

func (m *FS) walk(p string, walkFn filepath.WalkFunc) error {
	info := m.stat(p)
	err := walkFn(p, info, nil)
	if !info.IsDir() || err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(m.dirs[p])) {
		err := m.walk(filepath.Join(p, name), walkFn)
		if errors.Is(err, filepath.SkipDir) {
			if m.dirs[filepath.Join(p, name)] != nil {
				continue // that directory is skipped
			}
			return nil // a file skips the rest of its directory
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (m *FS) stat(p string) memInfo {
	if entries := m.dirs[p]; entries != nil {
		return memInfo{name: filepath.Base(p), dir: true, size: int64(len(entries))}
	}
	return memInfo{name: filepath.Base(p), size: int64(len(m.files[p]))}
}

// notExist is the error of a path that is not there, worded as kyaml's file
// systems word it, and os.ErrNotExist to errors.Is.
func notExist(p string) error { return notExistError(p) }

type notExistError string

func (e notExistError) Error() string { return fmt.Sprintf("'%s' doesn't exist", string(e)) }
func (e notExistError) Unwrap() error { return os.ErrNotExist }

// memFile is an open file or directory of a FS.
type memFile struct {
	fs       *FS
	path     string
	offset   int
	writable bool
}

func (f *memFile) Read(p []byte) (int, error) {
	data, ok := f.fs.files[f.path]
	if !ok {
		return 0, fmt.Errorf("%s: is a directory", f.path)
	}
	if f.offset >= len(data) {
		return 0, io.EOF
	}
	n := copy(p, data[f.offset:])
	f.offset += n
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	if !f.writable {
		return 0, fmt.Errorf("%s: opened for reading", f.path)
	}
	f.fs.files[f.path] = append(bytes.Clone(f.fs.files[f.path]), p...)
	return len(p), nil
}

func (f *memFile) Close() error { return nil }

func (f *memFile) Stat() (os.FileInfo, error) { return f.fs.stat(f.path), nil }

// memInfo describes a FS entry.
type memInfo struct {
	name string
	dir  bool
	size int64
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() os.FileMode {
	if i.dir {
		return os.ModeDir | 0o555
	}
	return 0o444
}
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }

// Contents are m's files and directories, as a render worker receives them
// (source/wall's Job).
func (m *FS) Contents() (files map[string][]byte, dirs []string) {
	for d := range m.dirs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	return m.files, dirs
}
