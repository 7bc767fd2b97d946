package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
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

	remoteURL, auth := splitCredentials(req.URL)

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
			if err := fetch(ctx, repo, auth, "+refs/heads/*:refs/heads/*"); err != nil {
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
	if r, ok := e.resolved[name.String()]; ok && req.MaxAge > 0 && s.now().Sub(r.at) < req.MaxAge && hasCommit(repo, r.commit) {
		rev.Commit = r.commit
		return rev, nil
	}
	asked := s.now()
	commit, err := lsRemote(ctx, remoteURL, auth, name)
	if err != nil {
		if errors.Is(err, errRefNotFound) {
			return fail(ReasonRefNotFound, err)
		}
		return fail(ReasonGitOperation, err)
	}
	rev.Commit = commit
	if !hasCommit(repo, commit) {
		spec := fmt.Sprintf("+%s:%s", name, name)
		if err := fetch(ctx, repo, auth, spec); err != nil {
			return fail(ReasonGitOperation, err)
		}
		if !hasCommit(repo, commit) {
			// The remote names the commit and the fetch of that ref succeeded, so the
			// cache must be damaged (a ref left pointing at lost objects makes the
			// fetch a no-op). Drop it, so that the next Fetch starts afresh.
			if err := s.discardCache(e, req.URL); err != nil {
				return fail(ReasonCacheUnreadable, err)
			}
			return fail(ReasonCacheUnreadable, fmt.Errorf("fetched %s but commit %s is missing; cache discarded", name, commit))
		}
	}
	e.resolved[name.String()] = resolution{commit: commit, at: asked}
	return rev, nil
}

// Refresh forgets every resolution of url's refs, so that the next Fetch of any of
// them asks the remote whatever its MaxAge: a push notification (webhook) says the
// remote has moved.
func (s *Source) Refresh(url string) {
	e := s.entry(url)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.resolved = map[string]resolution{}
}

var errRefNotFound = errors.New("ref not found on the remote")

// lsRemote returns the commit a ref points at on the remote, peeling annotated tags.
func lsRemote(ctx context.Context, url string, auth transport.AuthMethod, name plumbing.ReferenceName) (string, error) {
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: remoteName, URLs: []string{url}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: auth, PeelingOption: git.AppendPeeled})
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

func fetch(ctx context.Context, repo *git.Repository, auth transport.AuthMethod, refspec string) error {
	err := repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: remoteName,
		Auth:       auth,
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
	dir := s.cacheDir(url)
	remoteURL, _ := splitCredentials(url)
	repo, err := git.PlainOpen(dir)
	if err == nil && refsIntact(repo) {
		if remote, rerr := repo.Remote(remoteName); rerr == nil && len(remote.Config().URLs) == 1 && remote.Config().URLs[0] == remoteURL {
			e.repo = repo
			return repo, nil
		}
	}
	if err := s.discardCache(e, url); err != nil {
		return nil, err
	}
	repo, err = git.PlainInit(dir, true)
	if err != nil {
		return nil, fmt.Errorf("creating cache %s: %w", dir, err)
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: remoteName, URLs: []string{remoteURL}}); err != nil {
		return nil, fmt.Errorf("configuring cache %s: %w", dir, err)
	}
	e.repo = repo
	return repo, nil
}

// cacheDir is where the bare repository caching url lives.
func (s *Source) cacheDir(url string) string {
	sum := sha256.Sum256([]byte(url))
	return filepath.Join(s.opts.CacheDir, "git", hex.EncodeToString(sum[:12]))
}

// discardCache forgets and deletes the cache of url; the next openCache re-creates it.
func (s *Source) discardCache(e *repoEntry, url string) error {
	e.repo = nil
	e.resolved = map[string]resolution{}
	if err := os.RemoveAll(s.cacheDir(url)); err != nil {
		return fmt.Errorf("discarding cache %s: %w", s.cacheDir(url), err)
	}
	return nil
}

// refsIntact reports whether every ref of a cached repository names an object the
// cache can read. A ref left pointing at lost objects would otherwise make every
// later fetch of it a no-op ("already up to date"), and the cache would never heal.
func refsIntact(repo *git.Repository) bool {
	refs, err := repo.References()
	if err != nil {
		return false
	}
	intact := true
	_ = refs.ForEach(func(r *plumbing.Reference) error {
		if r.Type() != plumbing.HashReference {
			return nil
		}
		if _, err := repo.Storer.EncodedObject(plumbing.AnyObject, r.Hash()); err != nil {
			intact = false
			return storer.ErrStop
		}
		return nil
	})
	return intact
}

// splitCredentials takes the credentials written into an http(s) URL
// ("https://user:token@host/...", or a token alone as the user) out of it and returns
// them as basic auth. Git then never holds them in a URL, so no error message that
// quotes the URL can show them, and the cache's config on disk does not store them.
func splitCredentials(raw string) (string, transport.AuthMethod) {
	u, err := neturl.Parse(raw)
	if err != nil || u.User == nil || (u.Scheme != "http" && u.Scheme != "https") {
		return raw, nil
	}
	password, _ := u.User.Password()
	auth := &githttp.BasicAuth{Username: u.User.Username(), Password: password}
	u.User = nil
	return u.String(), auth
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
