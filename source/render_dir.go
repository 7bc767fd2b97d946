package source

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"tether.dev/tether/source/gitcache"
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
	c := gitcache.NewDiskCopier(root, treeBounds(opts))
	if err := c.CopyFor(rel); err != nil {
		return nil, err
	}
	if err := c.Check(rel); err != nil {
		return nil, err
	}
	return wall.RenderFS(ctx, c.FS(), rel, Directory{}, helm, opts.renderOptions(), dec)
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
