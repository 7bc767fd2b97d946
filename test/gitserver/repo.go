package gitserver

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Repo is one bare repository and the work clone its helpers write through. Every
// helper that changes history pushes at once, so what a helper returns is what a
// client of the repository sees next. A Repo is not safe for concurrent use.
type Repo struct {
	name   string
	bare   string   // the bare repository clients read
	work   string   // the work clone the helpers commit in
	home   string   // HOME for the helpers' git processes
	url    string   // how a client reaches the repository: http:// or file://
	branch string   // the work clone's current branch
	server *Server  // nil for a repository made by NewLocalRepo
	env    []string // added to the environment of the helpers' git commands (SetEnv)
}

// CreateRepo creates the bare repository name (which may contain slashes, as in
// "org/app") with default branch main and no commits, and returns it. Clients reach it
// at s.URL(name). Pushing over HTTP is enabled (http.receivepack), though the helpers
// push straight to disk.
func (s *Server) CreateRepo(t testing.TB, name string) *Repo {
	t.Helper()
	r := newRepo(t, name, s.bareDir(name), s.home)
	r.url, r.server = s.URL(name), s
	return r
}

// NewLocalRepo creates a bare repository with default branch main and no commits in a
// temporary directory of t, for tests of file:// sources. Its URL is a file:// URL and
// it counts no requests.
func NewLocalRepo(t testing.TB, name string) *Repo {
	t.Helper()
	root := t.TempDir()
	r := newRepo(t, name, filepath.Join(root, filepath.FromSlash(name)+".git"), t.TempDir())
	r.url = r.FileURL()
	return r
}

func newRepo(t testing.TB, name, bare, home string) *Repo {
	t.Helper()
	r := &Repo{name: name, bare: bare, work: t.TempDir(), home: home, branch: "main"}
	if err := os.MkdirAll(filepath.Dir(bare), 0o755); err != nil {
		t.Fatalf("repository %s: %v", name, err)
	}
	r.git(t, "", "init", "--quiet", "--bare", "--initial-branch=main", bare)
	r.git(t, bare, "config", "http.receivepack", "true")
	r.git(t, r.work, "init", "--quiet", "--initial-branch=main")
	r.git(t, r.work, "remote", "add", "origin", bare)
	return r
}

// Name returns the name the repository was created with.
func (r *Repo) Name() string { return r.name }

// URL returns the URL a client should clone: the server's http:// URL, or the
// file:// URL of a repository made by NewLocalRepo.
func (r *Repo) URL() string { return r.url }

// FileURL returns a file:// URL of the bare repository, which reaches the same
// history as URL without going through the server (and without its authentication or
// counters).
func (r *Repo) FileURL() string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(r.bare)}).String()
}

// Dir returns the path of the bare repository on disk.
func (r *Repo) Dir() string { return r.bare }

// Branch returns the branch the helpers commit to.
func (r *Repo) Branch() string { return r.branch }

// Requests returns the requests the server answered for this repository so far; zero
// for a repository made by NewLocalRepo.
func (r *Repo) Requests() Requests {
	if r.server == nil {
		return Requests{}
	}
	return r.server.requestsFor(r.name)
}

// Traffic returns the bytes the server received and sent for this repository so
// far; zero for a repository made by NewLocalRepo.
func (r *Repo) Traffic() Traffic {
	if r.server == nil {
		return Traffic{}
	}
	return r.server.trafficFor(r.name)
}

// Commit writes files (slash-separated paths relative to the repository root, mapped
// to their content), commits them with message on the current branch, pushes the
// branch and returns the new commit's full SHA. An empty content deletes the file
// instead (a missing file is not an error), so one commit can add, change and remove.
// Files not named keep their content. A commit that changes nothing is still made.
func (r *Repo) Commit(t testing.TB, files map[string]string, message string) string {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(r.work, filepath.FromSlash(name))
		if content == "" {
			if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
				t.Fatalf("repository %s: deleting %s: %v", r.name, name, err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("repository %s: writing %s: %v", r.name, name, err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatalf("repository %s: writing %s: %v", r.name, name, err)
		}
	}
	r.git(t, r.work, "add", "--all")
	r.git(t, r.work, "commit", "--quiet", "--allow-empty", "--message", message)
	r.git(t, r.work, "push", "--quiet", "origin", "HEAD:refs/heads/"+r.branch)
	return r.Head(t)
}

// Head returns the full SHA of the current branch's newest commit.
func (r *Repo) Head(t testing.TB) string {
	t.Helper()
	return r.git(t, r.work, "rev-parse", "HEAD")
}

// CreateBranch creates branch name at the current commit, pushes it and makes it the
// branch later commits go to. The repository needs at least one commit.
func (r *Repo) CreateBranch(t testing.TB, name string) {
	t.Helper()
	r.git(t, r.work, "checkout", "--quiet", "-b", name)
	r.git(t, r.work, "push", "--quiet", "origin", "HEAD:refs/heads/"+name)
	r.branch = name
}

// SwitchBranch makes the existing branch name the one later commits go to.
func (r *Repo) SwitchBranch(t testing.TB, name string) {
	t.Helper()
	r.git(t, r.work, "checkout", "--quiet", name)
	r.branch = name
}

// Tag points the lightweight tag name at the current commit and pushes it, moving the
// tag if it exists (a force-pushed tag is a case a GitOps agent must notice). It
// returns the commit SHA the tag names.
func (r *Repo) Tag(t testing.TB, name string) string {
	t.Helper()
	r.git(t, r.work, "tag", "--force", "--no-sign", name)
	r.git(t, r.work, "push", "--quiet", "--force", "origin", "refs/tags/"+name)
	return r.Head(t)
}

// AnnotatedTag is Tag for an annotated tag with message, the kind release tooling
// makes. The tag object has its own SHA; the returned SHA is the commit it peels to,
// which is the revision a client should report.
func (r *Repo) AnnotatedTag(t testing.TB, name, message string) string {
	t.Helper()
	r.git(t, r.work, "tag", "--force", "--annotate", "--message", message, name)
	r.git(t, r.work, "push", "--quiet", "--force", "origin", "refs/tags/"+name)
	return r.Head(t)
}

// ForcePush resets the current branch to rev (a SHA or anything git rev-parse takes,
// such as "HEAD~1") and force-pushes it, rewriting history the way a user undoing a
// bad commit would. It returns the full SHA the branch now names.
func (r *Repo) ForcePush(t testing.TB, rev string) string {
	t.Helper()
	r.git(t, r.work, "reset", "--quiet", "--hard", rev)
	r.git(t, r.work, "push", "--quiet", "--force", "origin", "HEAD:refs/heads/"+r.branch)
	return r.Head(t)
}

// Configure sets git configuration of the work clone that later commits and
// tags follow: with commit.gpgsign and tag.gpgsign "true", Commit and
// AnnotatedTag sign (test/signing says how to sign with a key of a test's own);
// "false" stops it.
func (r *Repo) Configure(t testing.TB, config map[string]string) {
	t.Helper()
	for key, value := range config {
		r.git(t, r.work, "config", key, value)
	}
}

// SetEnv adds variables to the environment of the helpers' git commands from
// now on ("GNUPGHOME=…", for gpg to find a test's keys).
func (r *Repo) SetEnv(vars ...string) {
	r.env = append(r.env, vars...)
}

// DeleteBranch deletes branch name on the server, the default branch included
// (which git refuses over a push), as a host's web interface would.
func (r *Repo) DeleteBranch(t testing.TB, name string) {
	t.Helper()
	r.git(t, r.bare, "update-ref", "-d", "refs/heads/"+name)
}

// Hide makes the server answer as if the repository had been deleted (404), and
// returns the function that brings it back.
func (r *Repo) Hide(t testing.TB) (restore func()) {
	t.Helper()
	hidden := r.bare + ".hidden"
	if err := os.Rename(r.bare, hidden); err != nil {
		t.Fatalf("repository %s: hiding: %v", r.name, err)
	}
	return func() {
		t.Helper()
		if err := os.Rename(hidden, r.bare); err != nil {
			t.Fatalf("repository %s: restoring: %v", r.name, err)
		}
	}
}

// git runs one helper git command and fails the test, naming the repository, if it
// fails.
func (r *Repo) git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := runGitEnv(r.home, r.env, dir, args...)
	if err != nil {
		t.Fatalf("repository %s: git %s: %v", r.name, strings.Join(args, " "), err)
	}
	return out
}
