package gitcache

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/render"
)

// Tree copies into an in-memory file system rooted at "/" the files of a commit
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
//
// More directories than one (spec.kustomize's components) are copied into the
// same file system, within the same bounds.
func (c *Cache) Tree(rev Revision, dir string, more ...string) (*render.FS, error) {
	e := c.entry(rev.URL)
	e.mu.Lock()
	defer e.mu.Unlock()
	defer e.forgetObjects()
	// An entry swept for idleness (or an agent restarted) still has the commit on
	// disk: a revision applied before can be rendered again while git is down.
	repo, err := c.openCache(e, rev.URL)
	if err != nil {
		return nil, &FetchError{URL: rev.URL, Ref: rev.Ref, Reason: v1alpha1.ReasonCacheUnreadable, Err: err}
	}
	commit, err := repo.CommitObject(plumbing.NewHash(rev.Commit))
	if err != nil {
		return nil, &FetchError{URL: rev.URL, Ref: rev.Ref, Reason: v1alpha1.ReasonCommitNotFound, Err: fmt.Errorf("reading commit %s: %w", rev.Commit, err)}
	}
	tc := newTreeCopier(gitStore{repo: repo, trees: e.trees}, commit.TreeHash, c.opts.TreeBounds)
	dirs := append([]string{dir}, more...)
	for _, d := range dirs {
		if err := tc.copyFor(d); err != nil {
			return nil, c.unreadable(e, rev, err)
		}
	}
	for _, d := range dirs {
		if err := tc.check(d); err != nil {
			return nil, err
		}
	}
	return tc.fs, nil
}

// unreadable turns a failure to read a fetched commit's content from the cache (a
// disk error, files damaged under a running agent) into a FetchError, and discards
// the cache so that the next Fetch clones afresh. A *RenderError (content over a
// limit) is the repository's fault and passes unchanged.
func (c *Cache) unreadable(e *repoEntry, rev Revision, err error) error {
	if IsRenderError(err) {
		return err
	}
	err = fmt.Errorf("reading %s from the cache: %w; cache discarded", rev.Commit, err)
	if derr := c.discardCache(e, rev.URL); derr != nil {
		err = errors.Join(err, derr)
	}
	return &FetchError{URL: rev.URL, Ref: rev.Ref, Reason: v1alpha1.ReasonCacheUnreadable, Err: err}
}

// treeCopier copies chosen parts of one commit's tree. It never lists the whole
// commit: it reads trees lazily, directory by directory from the root, only those
// on the way to and below the directories rendering needs, and counts every entry
// it reads against bounds.MaxTreeEntries: each time it walks a tree (a tree that the commit
// names a thousand times counts a thousand times), and once for each tree it
// reads to find a path. A blob is read only when it is copied.
type treeCopier struct {
	store  treeStore
	fs     *render.FS
	root   plumbing.Hash
	bounds TreeBounds
	total  int64
	// entriesLeft is what is left to read of bounds.MaxTreeEntries.
	entriesLeft int
	trees       map[plumbing.Hash][]treeEntry // trees read, by id
	copied      map[string]bool               // directories copied, "." for all
	refused     map[string]*RenderError       // files left out, by path, with why
}

// fileRef is a file to copy: its directory and name, kept apart so that the
// files of one directory share one string for it.
type fileRef struct {
	dir, name string
}

func (f fileRef) path() string { return joinPath(f.dir, f.name) }

func joinPath(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

func newTreeCopier(store treeStore, root plumbing.Hash, opts TreeBounds) *treeCopier {
	return &treeCopier{store: store, fs: render.NewFS(), root: root,
		bounds: opts, entriesLeft: opts.MaxTreeEntries,
		trees: map[plumbing.Hash][]treeEntry{}, copied: map[string]bool{}, refused: map[string]*RenderError{}}
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

// tooMany is the error of a render whose trees are over TreeBounds.MaxTreeEntries,
// naming the directory being read when the count ran out.
func (c *treeCopier) tooMany(dir string) error {
	return &RenderError{File: dir, Reason: v1alpha1.ReasonRenderLimitExceeded,
		Err: fmt.Errorf("the directories rendering reads hold more than %d tree entries (the agent's --max-tree-entries), counting a directory each time the commit names it", c.bounds.MaxTreeEntries)}
}

// list returns the entries of the tree id, reading it on first use (fresh); dir
// names the tree in errors. A tree read is never larger than what is left of
// the count.
func (c *treeCopier) list(id plumbing.Hash, dir string) (entries []treeEntry, fresh bool, err error) {
	if entries, ok := c.trees[id]; ok {
		return entries, false, nil
	}
	entries, err = c.store.entries(id, max(c.entriesLeft, 0))
	switch {
	case errors.Is(err, errTooManyEntries):
		return nil, false, c.tooMany(dir)
	case errors.Is(err, errMalformedTree):
		return nil, false, &RenderError{File: dir, Err: err}
	case err != nil:
		return nil, false, fmt.Errorf("%s: %w", dir, err)
	}
	c.trees[id] = entries
	return entries, true, nil
}

// charge counts n entries read in dir.
func (c *treeCopier) charge(n int, dir string) error {
	c.entriesLeft -= n
	if c.entriesLeft < 0 {
		return c.tooMany(dir)
	}
	return nil
}

// lookup finds the entry at p, reading the trees on the way; ok is false when
// nothing is there.
func (c *treeCopier) lookup(p string) (e treeEntry, ok bool, err error) {
	e = treeEntry{name: ".", kind: entryTree, hash: c.root}
	if p == "." {
		return e, true, nil
	}
	dir := "."
	for _, part := range strings.Split(p, "/") {
		if e.kind != entryTree {
			return treeEntry{}, false, nil
		}
		entries, fresh, err := c.list(e.hash, dir)
		if err != nil {
			return treeEntry{}, false, err
		}
		if fresh {
			if err := c.charge(len(entries), dir); err != nil {
				return treeEntry{}, false, err
			}
		}
		found := false
		for _, x := range entries {
			if x.name == part {
				e, found = x, true
				break
			}
		}
		if !found {
			return treeEntry{}, false, nil
		}
		dir = joinPath(dir, part)
	}
	return e, true, nil
}

// walk lists the files and symlinks below the tree at dir, depth first, charging
// every entry of every tree it passes, and leaving out directories copied
// already.
func (c *treeCopier) walk(dir string, id plumbing.Hash) ([]fileRef, error) {
	type pending struct {
		dir string
		id  plumbing.Hash
	}
	var files []fileRef
	stack := []pending{{dir, id}}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		entries, _, err := c.list(p.id, p.dir)
		if err != nil {
			return nil, err
		}
		if err := c.charge(len(entries), p.dir); err != nil {
			return nil, err
		}
		for _, e := range entries {
			switch e.kind {
			case entryTree:
				sub := joinPath(p.dir, e.name)
				if len(sub) > maxEntryName {
					return nil, &RenderError{File: p.dir, Reason: v1alpha1.ReasonRenderLimitExceeded, Err: fmt.Errorf("paths longer than %d bytes", maxEntryName)}
				}
				if !c.copied[sub] {
					stack = append(stack, pending{sub, e.hash})
				}
			case entryFile, entrySymlink:
				files = append(files, fileRef{dir: p.dir, name: e.name})
			}
		}
	}
	return files, nil
}

// copyDir copies every file below dir (or dir itself, if it names a file) and
// returns the kustomization files among them. Every tree below dir is counted
// before any file is copied.
func (c *treeCopier) copyDir(dir string) ([]string, error) {
	e, ok, err := c.lookup(dir)
	if err != nil || !ok {
		return nil, err
	}
	files := []fileRef{{dir: path.Dir(dir), name: path.Base(dir)}}
	switch e.kind {
	case entryTree:
		if files, err = c.walk(dir, e.hash); err != nil {
			return nil, err
		}
	case entryOther:
		return nil, nil
	}
	var kustomizations []string
	for _, f := range files {
		name := f.path()
		if err := c.copyFile(name); err != nil {
			return nil, err
		}
		if render.IsKustomizationFile(f.name) {
			kustomizations = append(kustomizations, name)
		}
	}
	return kustomizations, nil
}

// rootsOf lists the directories of the repository that the kustomization file
// names as roots. Whatever cannot be read is left for rendering to report.
func (c *treeCopier) rootsOf(file string) []string {
	data, err := c.fs.ReadFile("/" + file)
	if err != nil {
		return nil
	}
	var roots []string
	for _, ref := range render.LocalRoots(data) {
		p := path.Clean(path.Join(path.Dir(file), ref))
		if p != ".." && !strings.HasPrefix(p, "../") {
			roots = append(roots, p)
		}
	}
	return roots
}

// copyFile copies one file, or the file a symlink leads to, to name.
func (c *treeCopier) copyFile(name string) error {
	target, id, err := c.resolve(name)
	var re *RenderError
	if errors.As(err, &re) && re.Reason != "" {
		return err // a bound of the whole render, not of this file
	}
	if err != nil {
		c.refused[name] = &RenderError{File: name, Err: err}
		return nil
	}
	if target == "" {
		return nil // a link to a directory or to nothing
	}
	size, err := c.store.size(id)
	if err != nil {
		return fmt.Errorf("%s: reading: %w", target, err)
	}
	if size > c.bounds.MaxFileSize {
		c.refused[name] = &RenderError{File: name, Err: fmt.Errorf("%sfile of %d bytes is over the limit of %d", linkTo(name, target), size, c.bounds.MaxFileSize)}
		return nil
	}
	c.total += size
	if c.total > c.bounds.MaxTreeSize {
		return &RenderError{File: ".", Reason: v1alpha1.ReasonRenderLimitExceeded, Err: fmt.Errorf("the files rendering reads are over the limit of %d bytes", c.bounds.MaxTreeSize)}
	}
	r, err := c.store.open(id)
	if err != nil {
		return fmt.Errorf("%s: reading: %w", target, err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, c.bounds.MaxFileSize+1))
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
func (c *treeCopier) resolve(name string) (string, plumbing.Hash, error) {
	for hops := 0; hops < 8; hops++ {
		entry, ok, err := c.lookup(name)
		if err != nil {
			return "", plumbing.ZeroHash, err
		}
		if !ok || entry.kind == entryTree || entry.kind == entryOther {
			return "", plumbing.ZeroHash, nil
		}
		if entry.kind == entryFile {
			return name, entry.hash, nil
		}
		target, err := c.readLink(entry.hash)
		if err != nil {
			return "", plumbing.ZeroHash, fmt.Errorf("reading symlink: %w", err)
		}
		resolved := path.Clean(path.Join(path.Dir(name), target))
		if path.IsAbs(target) || resolved == ".." || strings.HasPrefix(resolved, "../") {
			return "", plumbing.ZeroHash, fmt.Errorf("symlink to %q points outside the repository", target)
		}
		name = resolved
	}
	return "", plumbing.ZeroHash, nil
}

// readLink reads a symlink's target, up to 4 KiB of it.
func (c *treeCopier) readLink(id plumbing.Hash) (string, error) {
	r, err := c.store.open(id)
	if err != nil {
		return "", err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, 4096))
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

// HoldsFile reports whether the commit of rev holds name (a path from its
// root) as anything but a directory, reading only the trees on the way to it:
// source asks it whether a path holds a Chart.yaml before it keys a render.
// read is false when the cache could not tell (the commit is not fetched, or
// its trees cannot be read); the render that follows reports why.
func (c *Cache) HoldsFile(rev Revision, name string) (found, read bool, err error) {
	e := c.entry(rev.URL)
	e.mu.Lock()
	defer e.mu.Unlock()
	repo, err := c.openCache(e, rev.URL)
	if err != nil {
		return false, false, nil //nolint:nilerr // the render reports an unreadable cache
	}
	commit, err := repo.CommitObject(plumbing.NewHash(rev.Commit))
	if err != nil {
		return false, false, nil //nolint:nilerr // the render reports a missing commit
	}
	tc := newTreeCopier(gitStore{repo: repo, trees: e.trees}, commit.TreeHash, c.opts.TreeBounds)
	entry, ok, err := tc.lookup(name)
	switch {
	case IsRenderError(err):
		return false, false, err
	case err != nil:
		return false, false, nil // the render reports an unreadable tree
	}
	return ok && entry.kind != entryTree, true, nil
}
