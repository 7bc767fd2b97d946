package source

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/gitcache"
	"tether.dev/tether/source/wall"
)

// Checkout is a local git repository (a clone, as a CI job has one) whose
// commits are rendered the way the agent renders a fetched commit: the same tree
// copier, within the same bounds, the same render. `tether preview` renders the
// base and head of a pull request with it, commits that may be on no branch of
// any remote (a pull request's merge commit).
type Checkout struct {
	repo *git.Repository
	opts Options
}

// OpenCheckout opens the repository that holds dir (dir or a parent with .git).
// opts bound each render, as they bound the agent's.
func OpenCheckout(dir string, opts Options) (*Checkout, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, fmt.Errorf("opening the git repository at %s: %w", dir, err)
	}
	return &Checkout{repo: repo, opts: opts}, nil
}

// Resolve returns the full commit hash that rev (a branch, tag, remote branch,
// hash or expression such as HEAD~1) names.
func (c *Checkout) Resolve(rev string) (string, error) {
	h, err := c.repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return "", fmt.Errorf("resolving %q: %w", rev, err)
	}
	return h.String(), nil
}

// RemoteURLs lists the URLs of the repository's remotes.
func (c *Checkout) RemoteURLs() ([]string, error) {
	remotes, err := c.repo.Remotes()
	if err != nil {
		return nil, err
	}
	var urls []string
	for _, r := range remotes {
		urls = append(urls, r.Config().URLs...)
	}
	return urls, nil
}

// Render renders dir (relative to the repository root) of commit; a dir the
// commit does not hold renders to nothing. A dir holding a Chart.yaml renders as
// a Helm chart with helm (its values, release and capabilities, as the agent
// says them: sync.HelmFor), by the agent's chart render; a plain directory
// renders what sel (spec.source.directory) selects. k (spec.kustomize, nil
// for none) goes on top, its components read from commit, as Source.Overlay
// puts it. A panic in rendering becomes a RenderError, as in the agent, and
// the render runs in a worker behind the agent's wall (source/wall).
func (c *Checkout) Render(ctx context.Context, commit, dir string, sel Directory, helm Helm, k *v1alpha1.Kustomize) (objs []*unstructured.Unstructured, err error) {
	clean, err := CleanPath(dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			objs, err = nil, &RenderError{File: clean, Err: fmt.Errorf("rendering panicked: %v", r)}
		}
	}()
	obj, err := c.repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", commit, err)
	}
	copier := gitcache.NewCommitCopier(c.repo, obj.TreeHash, treeBounds(c.opts))
	if err := copier.CopyFor(clean); err != nil {
		return nil, err
	}
	if err := copier.Check(clean); err != nil {
		return nil, err
	}
	objs, err = wall.RenderFS(ctx, copier.FS(), clean, sel, helm, c.opts.renderOptions(), nil)
	if errors.Is(err, ErrNoSuchPath) {
		// A path the commit does not hold renders nothing: an app a pull request
		// adds has no base.
		return nil, nil
	}
	if err != nil || k.IsEmpty() {
		return objs, err
	}
	ov := &wall.OverlayJob{Kustomize: *k}
	if len(k.Components) > 0 {
		more := gitcache.NewCommitCopier(c.repo, obj.TreeHash, treeBounds(c.opts))
		for _, comp := range k.Components {
			d, err := CleanPath(path.Join(clean, comp))
			if err != nil {
				return nil, &RenderError{File: clean, Err: fmt.Errorf("spec.kustomize.components: %q: %w", comp, err)}
			}
			if err := more.CopyFor(d); err != nil {
				return nil, err
			}
			if err := more.Check(d); err != nil {
				return nil, err
			}
			ov.Components = append(ov.Components, d)
		}
		ov.Files, ov.Dirs = more.FS().Contents()
	}
	snap, err := wall.RunOverlay(&Snapshot{Path: clean, Objects: objs}, ov, c.opts.renderOptions())
	if err != nil {
		return nil, err
	}
	return snap.Objects, nil
}
