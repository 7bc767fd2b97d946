package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	gosync "sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Render renders dir (relative to the repository root) of a fetched revision. Results
// are cached by (URL, commit, path): a revision's content never changes, so a resync
// of an unchanged revision costs no rendering. Each call returns its own copy.
func (s *Source) Render(ctx context.Context, rev Revision, dir string) (*Snapshot, error) {
	clean, err := CleanPath(dir)
	if err != nil {
		return nil, err
	}
	key := rev.URL + "\x00" + rev.Commit + "\x00" + clean
	objs, ok := s.renders.get(key)
	if !ok {
		if objs, err = s.render(ctx, rev, clean); err != nil {
			return nil, err
		}
		s.renders.put(key, objs)
	}
	return &Snapshot{Revision: rev, Path: clean, Objects: deepCopy(objs)}, nil
}

func (s *Source) render(ctx context.Context, rev Revision, dir string) ([]*unstructured.Unstructured, error) {
	fs, err := s.tree(rev, dir)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return Render(fs, "/", path.Join("/", dir), RenderOptions{MaxObjects: s.opts.MaxObjects, MaxBytes: s.opts.MaxRenderedBytes})
}

// CleanPath checks a path inside the repository and returns it cleaned ("." for the
// root). Absolute paths and paths that climb out of the repository are refused.
func CleanPath(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if path.IsAbs(p) {
		return "", &RenderError{File: p, Err: errors.New("path must be relative to the repository root")}
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", &RenderError{File: p, Err: errors.New("path leaves the repository")}
	}
	return clean, nil
}

// tree copies the files of a commit into an in-memory file system rooted at "/".
// Only regular files are copied as they are. A symlink is resolved inside the tree
// and replaced by a copy of its target file; one that points outside the repository
// is left out and, if it lies under dir, fails the render. Files over the size limit
// are left out likewise.
func (s *Source) tree(rev Revision, dir string) (filesys.FileSystem, error) {
	e := s.entry(rev.URL)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.repo == nil {
		return nil, &FetchError{URL: rev.URL, Ref: rev.Ref, Reason: ReasonCacheUnreadable, Err: errors.New("revision was not fetched")}
	}
	commit, err := e.repo.CommitObject(plumbing.NewHash(rev.Commit))
	if err != nil {
		return nil, &FetchError{URL: rev.URL, Ref: rev.Ref, Reason: ReasonCommitNotFound, Err: fmt.Errorf("reading commit %s: %w", rev.Commit, err)}
	}
	t, err := commit.Tree()
	if err != nil {
		return nil, s.unreadable(e, rev, err)
	}

	c := treeCopier{fs: filesys.MakeFsInMemory(), maxFile: s.opts.MaxFileSize, maxTree: s.opts.MaxTreeSize,
		blobs: map[string]*object.File{}, links: map[string]string{}, refused: map[string]*RenderError{}}
	if err := t.Files().ForEach(c.add); err != nil {
		return nil, s.unreadable(e, rev, err)
	}
	if err := c.resolveLinks(); err != nil {
		return nil, s.unreadable(e, rev, err)
	}
	return c.fs, c.check(dir)
}

// unreadable turns a failure to read a fetched commit's content from the cache (a
// disk error, files damaged under a running agent) into a FetchError, and discards
// the cache so that the next Fetch clones afresh. A *RenderError (content over a
// limit) is the repository's fault and passes unchanged.
func (s *Source) unreadable(e *repoEntry, rev Revision, err error) error {
	if IsRenderError(err) {
		return err
	}
	err = fmt.Errorf("reading %s from the cache: %w; cache discarded", rev.Commit, err)
	if derr := s.discardCache(e, rev.URL); derr != nil {
		err = errors.Join(err, derr)
	}
	return &FetchError{URL: rev.URL, Ref: rev.Ref, Reason: ReasonCacheUnreadable, Err: err}
}

type treeCopier struct {
	fs               filesys.FileSystem
	maxFile, maxTree int64
	total            int64
	blobs            map[string]*object.File // every regular file, by path
	links            map[string]string       // symlink path → target path, cleaned
	refused          map[string]*RenderError // files left out, by path, with why
}

// refuse leaves the file name out, saying why.
func (c *treeCopier) refuse(name string, err error) {
	c.refused[name] = &RenderError{File: name, Err: err}
}

func (c *treeCopier) add(f *object.File) error {
	switch {
	case f.Mode == filemode.Symlink:
		target, err := f.Contents()
		if err != nil {
			return fmt.Errorf("%s: reading symlink: %w", f.Name, err)
		}
		resolved := path.Clean(path.Join(path.Dir(f.Name), target))
		if path.IsAbs(target) || resolved == ".." || strings.HasPrefix(resolved, "../") {
			c.refuse(f.Name, fmt.Errorf("symlink to %q points outside the repository", target))
			return nil
		}
		c.links[f.Name] = resolved
		return nil
	case !f.Mode.IsFile():
		return nil // submodules are not followed
	case f.Size > c.maxFile:
		c.refuse(f.Name, fmt.Errorf("file of %d bytes is over the limit of %d", f.Size, c.maxFile))
		return nil
	}
	c.blobs[f.Name] = f
	return c.write(f.Name, f)
}

func (c *treeCopier) write(name string, f *object.File) error {
	c.total += f.Size
	if c.total > c.maxTree {
		return &RenderError{File: ".", Err: fmt.Errorf("repository content is over the limit of %d bytes", c.maxTree)}
	}
	r, err := f.Reader()
	if err != nil {
		return fmt.Errorf("%s: reading: %w", f.Name, err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, c.maxFile+1))
	if err != nil {
		return fmt.Errorf("%s: reading: %w", f.Name, err)
	}
	return c.fs.WriteFile("/"+name, data)
}

// resolveLinks replaces each symlink by its target file, following chains of links a
// few hops deep; links to directories or to nothing are left out. A link to a file
// that was refused is refused too, or rendering would silently miss the file.
func (c *treeCopier) resolveLinks() error {
	for link, target := range c.links {
		for hops := 0; hops < 8; hops++ {
			next, isLink := c.links[target]
			if !isLink {
				break
			}
			target = next
		}
		if f, ok := c.blobs[target]; ok {
			if err := c.write(link, f); err != nil {
				return err
			}
		} else if r, ok := c.refused[target]; ok {
			c.refuse(link, fmt.Errorf("symlink to %q: %w", target, r.Err))
		}
	}
	return nil
}

// check fails when a file left out lies under the directory being rendered, naming
// the first such file in path order so that the error is stable.
func (c *treeCopier) check(dir string) error {
	var first *RenderError
	for name, r := range c.refused {
		if (dir == "." || name == dir || strings.HasPrefix(name, dir+"/")) && (first == nil || name < first.File) {
			first = r
		}
	}
	if first == nil {
		return nil
	}
	return first
}

// renderCache keeps rendered objects by key, dropping an arbitrary entry when full.
type renderCache struct {
	mu      gosync.Mutex
	max     int
	entries map[string][]*unstructured.Unstructured
}

func newRenderCache(maxEntries int) *renderCache {
	return &renderCache{max: maxEntries, entries: map[string][]*unstructured.Unstructured{}}
}

func (c *renderCache) get(key string) ([]*unstructured.Unstructured, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	objs, ok := c.entries[key]
	return objs, ok
}

func (c *renderCache) put(key string, objs []*unstructured.Unstructured) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[key] = objs
}

func deepCopy(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	return out
}
