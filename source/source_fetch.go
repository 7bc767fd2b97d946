package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	"tether.dev/tether/api/v1alpha1"
)

const remoteName = "origin"

// Fetch resolves req.Ref to a commit and makes sure that commit is in the local
// cache. It lists the remote refs first (one small request) and fetches only when
// the commit is not cached yet, so polling an unchanged repository costs one request.
func (s *Source) Fetch(ctx context.Context, req Request) (Revision, error) {
	ref := req.Ref
	if ref == (v1alpha1.GitRef{}) {
		ref.Branch = "main"
	}
	rev := Revision{URL: req.URL, Ref: ref.String()}
	fail := func(reason string, err error) (Revision, error) {
		return rev, &FetchError{URL: req.URL, Ref: refLabel(ref), Reason: reason, Err: err}
	}
	if err := checkURL(req.URL); err != nil {
		return fail(ReasonUnsupportedURL, err)
	}

	e := s.entry(req.URL)
	e.mu.Lock()
	defer e.mu.Unlock()
	repo, err := s.openCache(e, req.URL)
	if err != nil {
		return fail(ReasonCacheUnreadable, err)
	}

	switch {
	case ref.SemVer != "":
		return fail(ReasonUnsupportedRef, errors.New("semver refs are not supported yet"))
	case ref.Commit != "":
		rev.Commit = ref.Commit
		if !hasCommit(repo, rev.Commit) {
			if err := fetch(ctx, repo, "+refs/heads/*:refs/heads/*"); err != nil {
				return fail(ReasonGitOperation, err)
			}
		}
		if !hasCommit(repo, rev.Commit) {
			return fail(ReasonCommitNotFound, fmt.Errorf("commit %s is not on any branch", rev.Commit))
		}
		return rev, nil
	}

	name := plumbing.NewBranchReferenceName(ref.Branch)
	if ref.Tag != "" {
		name = plumbing.NewTagReferenceName(ref.Tag)
	}
	commit, err := lsRemote(ctx, req.URL, name)
	if err != nil {
		if errors.Is(err, errRefNotFound) {
			return fail(ReasonRefNotFound, err)
		}
		return fail(ReasonGitOperation, err)
	}
	rev.Commit = commit
	if !hasCommit(repo, commit) {
		spec := fmt.Sprintf("+%s:%s", name, name)
		if err := fetch(ctx, repo, spec); err != nil {
			return fail(ReasonGitOperation, err)
		}
		if !hasCommit(repo, commit) {
			return fail(ReasonCommitNotFound, fmt.Errorf("fetched %s but commit %s is missing", name, commit))
		}
	}
	return rev, nil
}

var errRefNotFound = errors.New("ref not found on the remote")

// lsRemote returns the commit a ref points at on the remote, peeling annotated tags.
func lsRemote(ctx context.Context, url string, name plumbing.ReferenceName) (string, error) {
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: remoteName, URLs: []string{url}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{PeelingOption: git.AppendPeeled})
	if err != nil {
		return "", fmt.Errorf("listing remote refs: %w", err)
	}
	var direct, peeled string
	for _, r := range refs {
		switch r.Name().String() {
		case name.String():
			direct = r.Hash().String()
		case name.String() + "^{}":
			peeled = r.Hash().String()
		}
	}
	switch {
	case peeled != "":
		return peeled, nil
	case direct != "":
		return direct, nil
	}
	return "", fmt.Errorf("%s: %w", name.Short(), errRefNotFound)
}

func fetch(ctx context.Context, repo *git.Repository, refspec string) error {
	err := repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: remoteName,
		RefSpecs:   []config.RefSpec{config.RefSpec(refspec)},
		Tags:       git.NoTags,
		Force:      true,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("fetching %s: %w", refspec, err)
	}
	return nil
}

func hasCommit(repo *git.Repository, commit string) bool {
	_, err := repo.CommitObject(plumbing.NewHash(commit))
	return err == nil
}

// openCache opens the bare repository that caches url, creating it on first use and
// re-creating it when it is unreadable (a crash mid-write, a full disk): the cache is
// only a cache, the remote is the truth.
func (s *Source) openCache(e *repoEntry, url string) (*git.Repository, error) {
	if e.repo != nil {
		return e.repo, nil
	}
	sum := sha256.Sum256([]byte(url))
	dir := filepath.Join(s.opts.CacheDir, "git", hex.EncodeToString(sum[:12]))
	repo, err := git.PlainOpen(dir)
	if err == nil {
		if remote, rerr := repo.Remote(remoteName); rerr == nil && len(remote.Config().URLs) == 1 && remote.Config().URLs[0] == url {
			e.repo = repo
			return repo, nil
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("discarding cache %s: %w", dir, err)
	}
	repo, err = git.PlainInit(dir, true)
	if err != nil {
		return nil, fmt.Errorf("creating cache %s: %w", dir, err)
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: remoteName, URLs: []string{url}}); err != nil {
		return nil, fmt.Errorf("configuring cache %s: %w", dir, err)
	}
	e.repo = repo
	return repo, nil
}

// checkURL accepts the transports this build supports.
func checkURL(url string) error {
	for _, p := range []string{"https://", "http://", "file://"} {
		if strings.HasPrefix(url, p) {
			return nil
		}
	}
	return fmt.Errorf("unsupported URL %q: use https://, http:// or file://", url)
}

// refLabel names a ref for messages, including a pinned commit.
func refLabel(ref v1alpha1.GitRef) string {
	if s := ref.String(); s != "" {
		return s
	}
	return ref.Commit
}
