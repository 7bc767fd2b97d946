package source

import (
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// tree copies into an in-memory file system rooted at "/" the files of a commit
// that rendering dir can read: every file below dir and, when dir holds a
// kustomization, below every directory its kustomizations name as a root
// (resources, components, generators, …), transitively. Nothing else of the
// commit is read, so a Sync rendering one small directory of a large repository
// costs the size of that directory.
//
// Only regular files are copied as they are. A symlink is resolved inside the tree
// and replaced by a copy of its target file; one that points outside the repository
// is left out and, if it lies under dir, fails the render. Files over the size limit
// are left out likewise.
func (s *Source) tree(rev Revision, dir string) (filesys.FileSystem, error) {
	e := s.entry(rev.URL)
	e.mu.Lock()
	defer e.mu.Unlock()
	// An entry swept for idleness (or an agent restarted) still has the commit on
	// disk: a revision applied before can be rendered again while git is down.
	repo, err := s.openCache(e, rev.URL)
	if err != nil {
		return nil, &FetchError{URL: rev.URL, Ref: rev.Ref, Reason: ReasonCacheUnreadable, Err: err}
	}
	commit, err := repo.CommitObject(plumbing.NewHash(rev.Commit))
	if err != nil {
		return nil, &FetchError{URL: rev.URL, Ref: rev.Ref, Reason: ReasonCommitNotFound, Err: fmt.Errorf("reading commit %s: %w", rev.Commit, err)}
	}
	t, err := commit.Tree()
	if err != nil {
		return nil, s.unreadable(e, rev, err)
	}
	c, err := newTreeCopier(repo, t, s.opts.MaxFileSize, s.opts.MaxTreeSize)
	if err != nil {
		return nil, s.unreadable(e, rev, err)
	}
	if err := c.copyFor(dir); err != nil {
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

// treeCopier copies chosen parts of one commit's tree. It lists the tree once
// (names, modes and object ids only) and reads a blob only when it copies it.
type treeCopier struct {
	repo             *git.Repository
	fs               filesys.FileSystem
	maxFile, maxTree int64
	total            int64
	entries          map[string]object.TreeEntry // files and symlinks, by path
	names            []string                    // keys of entries, sorted
	copied           map[string]bool             // directories copied, "." for all
	refused          map[string]*RenderError     // files left out, by path, with why
}

func newTreeCopier(repo *git.Repository, t *object.Tree, maxFile, maxTree int64) (*treeCopier, error) {
	c := &treeCopier{repo: repo, fs: filesys.MakeFsInMemory(), maxFile: maxFile, maxTree: maxTree,
		entries: map[string]object.TreeEntry{}, copied: map[string]bool{}, refused: map[string]*RenderError{}}
	w := object.NewTreeWalker(t, true, nil)
	defer w.Close()
	for {
		name, entry, err := w.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if entry.Mode == filemode.Symlink || entry.Mode.IsFile() {
			c.entries[name] = entry
			c.names = append(c.names, name)
		}
	}
	sort.Strings(c.names)
	return c, nil
}

// copyFor copies dir and every kustomization root it reaches.
func (c *treeCopier) copyFor(dir string) error {
	queue := []string{dir}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		if c.isCopied(d) {
			continue
		}
		c.copied[d] = true
		kustomizations, err := c.copyDir(d)
		if err != nil {
			return err
		}
		for _, k := range kustomizations {
			queue = append(queue, c.rootsOf(k)...)
		}
	}
	return nil
}

// isCopied reports whether dir lies in a directory copied already.
func (c *treeCopier) isCopied(dir string) bool {
	for d := dir; ; d = path.Dir(d) {
		if c.copied[d] {
			return true
		}
		if d == "." || d == "/" {
			return false
		}
	}
}

// copyDir copies every file below dir and returns the kustomization files among them.
func (c *treeCopier) copyDir(dir string) ([]string, error) {
	var kustomizations []string
	for _, name := range c.names {
		if dir != "." && name != dir && !strings.HasPrefix(name, dir+"/") {
			continue
		}
		if err := c.copyFile(name); err != nil {
			return nil, err
		}
		if isKustomizationFile(path.Base(name)) {
			kustomizations = append(kustomizations, name)
		}
	}
	return kustomizations, nil
}

func isKustomizationFile(base string) bool {
	for _, k := range kustomizationFiles {
		if base == k {
			return true
		}
	}
	return false
}

// rootsOf lists the directories of the repository that the kustomization file
// names as roots. Whatever cannot be read is left for rendering to report.
func (c *treeCopier) rootsOf(file string) []string {
	data, err := c.fs.ReadFile("/" + file)
	if err != nil {
		return nil
	}
	// As kustomize reads it: a root spelt "Resources" is a root.
	k, err := decodeKustomization(data)
	if err != nil {
		return nil
	}
	var roots []string
	for _, r := range rootRefs(k) {
		ref := r.ref
		if ref == "" || strings.Contains(ref, "\n") || remoteShaped(ref) || path.IsAbs(ref) {
			continue
		}
		p := path.Clean(path.Join(path.Dir(file), ref))
		if p != ".." && !strings.HasPrefix(p, "../") {
			roots = append(roots, p)
		}
	}
	return roots
}

// copyFile copies one file, or the file a symlink leads to, to name.
func (c *treeCopier) copyFile(name string) error {
	target, err := c.resolve(name)
	if err != nil {
		c.refused[name] = &RenderError{File: name, Err: err}
		return nil
	}
	if target == "" {
		return nil // a link to a directory or to nothing
	}
	entry := c.entries[target]
	size, err := c.repo.Storer.EncodedObjectSize(entry.Hash)
	if err != nil {
		return fmt.Errorf("%s: reading: %w", target, err)
	}
	if size > c.maxFile {
		c.refused[name] = &RenderError{File: name, Err: fmt.Errorf("%sfile of %d bytes is over the limit of %d", linkTo(name, target), size, c.maxFile)}
		return nil
	}
	c.total += size
	if c.total > c.maxTree {
		return &RenderError{File: ".", Err: fmt.Errorf("the files rendering reads are over the limit of %d bytes", c.maxTree)}
	}
	blob, err := c.repo.BlobObject(entry.Hash)
	if err != nil {
		return fmt.Errorf("%s: reading: %w", target, err)
	}
	r, err := blob.Reader()
	if err != nil {
		return fmt.Errorf("%s: reading: %w", target, err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, c.maxFile+1))
	if err != nil {
		return fmt.Errorf("%s: reading: %w", target, err)
	}
	return c.fs.WriteFile("/"+name, data)
}

func linkTo(name, target string) string {
	if name == target {
		return ""
	}
	return fmt.Sprintf("symlink to %q: ", target)
}

// resolve follows symlinks from name, a few hops deep, to a regular file: "" for
// a link to a directory or to nothing, an error for one leaving the repository.
func (c *treeCopier) resolve(name string) (string, error) {
	for hops := 0; hops < 8; hops++ {
		entry, ok := c.entries[name]
		if !ok {
			return "", nil
		}
		if entry.Mode != filemode.Symlink {
			return name, nil
		}
		blob, err := c.repo.BlobObject(entry.Hash)
		if err != nil {
			return "", fmt.Errorf("reading symlink: %w", err)
		}
		target, err := readSmall(blob, 4096)
		if err != nil {
			return "", fmt.Errorf("reading symlink: %w", err)
		}
		resolved := path.Clean(path.Join(path.Dir(name), target))
		if path.IsAbs(target) || resolved == ".." || strings.HasPrefix(resolved, "../") {
			return "", fmt.Errorf("symlink to %q points outside the repository", target)
		}
		name = resolved
	}
	return "", nil
}

func readSmall(blob *object.Blob, limit int64) (string, error) {
	r, err := blob.Reader()
	if err != nil {
		return "", err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, limit))
	return string(data), err
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
