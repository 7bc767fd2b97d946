package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"tether.dev/tether/source/git"
)

// gitTarget is the branch of a repository that bootstrap writes into, and
// how to reach it.
type gitTarget struct {
	url    string
	branch string
	auth   git.Auth
	author object.Signature
}

// commitFiles clones the target's branch into a temporary directory, writes
// files (repository paths to contents), and commits and pushes them when any
// differs from what the branch holds. It returns the commit pushed, or "" when
// the branch already held every file as it is.
func (g gitTarget) commitFiles(files map[string][]byte, message string) (string, error) {
	tmp, err := os.MkdirTemp("", "tether-bootstrap-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	remotes, err := git.NewRemotes(tmp)
	if err != nil {
		return "", err
	}
	remote, err := remotes.For(g.url, g.auth)
	if err != nil {
		return "", err
	}
	defer remote.Done()
	dir := filepath.Join(tmp, "work")
	repo, err := g.clone(dir, remote)
	if err != nil {
		return "", err
	}
	changed, err := writeFiles(dir, files)
	if err != nil || len(changed) == 0 {
		return "", err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return "", err
	}
	for _, p := range changed {
		if _, err := wt.Add(p); err != nil {
			return "", fmt.Errorf("adding %s: %w", p, err)
		}
	}
	sig := g.author
	sig.When = time.Now()
	hash, err := wt.Commit(message, &gogit.CommitOptions{Author: &sig, Committer: &sig})
	if err != nil {
		return "", fmt.Errorf("committing: %w", err)
	}
	ref := plumbing.NewBranchReferenceName(g.branch)
	err = repo.Push(&gogit.PushOptions{
		RemoteName: "origin",
		Auth:       remote.Method,
		RefSpecs:   []config.RefSpec{config.RefSpec(ref + ":" + ref)},
	})
	if err != nil {
		return "", fmt.Errorf("pushing to %s %s: %w", remote.URL, g.branch, git.WithStatus(err))
	}
	return hash.String(), nil
}

// clone clones the target's branch into dir; an empty repository is
// initialized there instead, on the branch, with origin set.
func (g gitTarget) clone(dir string, remote *git.Remote) (*gogit.Repository, error) {
	ref := plumbing.NewBranchReferenceName(g.branch)
	repo, err := gogit.PlainClone(dir, false, &gogit.CloneOptions{
		URL: remote.URL, Auth: remote.Method, ReferenceName: ref, SingleBranch: true,
	})
	if err == nil {
		return repo, nil
	}
	if !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return nil, fmt.Errorf("cloning %s (branch %s): %w", remote.URL, g.branch, git.WithStatus(err))
	}
	_ = os.RemoveAll(dir)
	repo, err = gogit.PlainInit(dir, false)
	if err != nil {
		return nil, err
	}
	if err := repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, ref)); err != nil {
		return nil, err
	}
	_, err = repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{remote.URL}})
	return repo, err
}

// writeFiles writes each file that is missing or differs under dir, and
// returns their repository paths, sorted.
func writeFiles(dir string, files map[string][]byte) ([]string, error) {
	var changed []string
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if old, err := os.ReadFile(full); err == nil && bytes.Equal(old, content) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(full, content, 0o644); err != nil {
			return nil, err
		}
		changed = append(changed, path.Clean(p))
	}
	sort.Strings(changed)
	return changed, nil
}
