package gitserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/go-cmp/cmp"
	gossh "golang.org/x/crypto/ssh"
)

func TestServerServesCommitsOverHTTP(t *testing.T) {
	srv := Start(t, Options{})
	repo := srv.CreateRepo(t, "org/app")
	first := repo.Commit(t, map[string]string{
		"deploy/cm.yaml": "kind: ConfigMap\n",
		"README.md":      "app\n",
	}, "add config map")

	clone := filepath.Join(t.TempDir(), "clone")
	t.Run("a clone over HTTP sees the committed files at the returned SHA", func(t *testing.T) {
		Git(t, "", "clone", "--quiet", repo.URL(), clone)
		if got := readFile(t, filepath.Join(clone, "deploy", "cm.yaml")); got != "kind: ConfigMap\n" {
			t.Errorf("deploy/cm.yaml = %q, want the committed content", got)
		}
		if got := Git(t, clone, "rev-parse", "HEAD"); got != first {
			t.Errorf("clone HEAD = %s, want %s", got, first)
		}
		if got := Git(t, clone, "symbolic-ref", "--short", "HEAD"); got != "main" {
			t.Errorf("default branch = %s, want main", got)
		}
	})

	t.Run("an empty content deletes a file and other files stay", func(t *testing.T) {
		second := repo.Commit(t, map[string]string{"README.md": ""}, "drop readme")
		Git(t, clone, "pull", "--quiet")
		if got := Git(t, clone, "rev-parse", "HEAD"); got != second {
			t.Errorf("clone HEAD = %s, want %s", got, second)
		}
		if _, err := os.Stat(filepath.Join(clone, "README.md")); !os.IsNotExist(err) {
			t.Errorf("README.md still exists after the commit that deleted it (stat error %v)", err)
		}
		if got := readFile(t, filepath.Join(clone, "deploy", "cm.yaml")); got != "kind: ConfigMap\n" {
			t.Errorf("deploy/cm.yaml = %q, want it unchanged", got)
		}
	})
}

func TestRepoHelpersMoveRefs(t *testing.T) {
	srv := Start(t, Options{})
	repo := srv.CreateRepo(t, "app")
	v1 := repo.Commit(t, map[string]string{"app.yaml": "v: 1\n"}, "v1")

	t.Run("tags name the commit, annotated tags peel to it", func(t *testing.T) {
		if got := repo.Tag(t, "v1.0.0"); got != v1 {
			t.Errorf("Tag returned %s, want %s", got, v1)
		}
		if got := repo.AnnotatedTag(t, "v1.0.1", "release 1.0.1"); got != v1 {
			t.Errorf("AnnotatedTag returned %s, want %s", got, v1)
		}
		refs := lsRemote(t, repo.URL())
		want := map[string]string{
			"HEAD":                v1,
			"refs/heads/main":     v1,
			"refs/tags/v1.0.0":    v1,
			"refs/tags/v1.0.1^{}": v1,
			"refs/tags/v1.0.1":    refs["refs/tags/v1.0.1"], // the tag object's own SHA
		}
		if diff := cmp.Diff(want, refs); diff != "" {
			t.Errorf("ls-remote (-want +got):\n%s", diff)
		}
		if refs["refs/tags/v1.0.1"] == v1 {
			t.Errorf("annotated tag v1.0.1 points straight at the commit; want a tag object")
		}
	})

	t.Run("a branch gets its own commits", func(t *testing.T) {
		repo.CreateBranch(t, "staging")
		staging := repo.Commit(t, map[string]string{"app.yaml": "v: 2\n"}, "v2 on staging")
		repo.SwitchBranch(t, "main")
		refs := lsRemote(t, repo.URL())
		if refs["refs/heads/staging"] != staging || refs["refs/heads/main"] != v1 {
			t.Errorf("staging = %s, main = %s; want staging %s, main %s",
				refs["refs/heads/staging"], refs["refs/heads/main"], staging, v1)
		}
	})

	t.Run("a force-push rewrites the branch and a moved tag follows", func(t *testing.T) {
		v2 := repo.Commit(t, map[string]string{"app.yaml": "v: 2\n"}, "v2")
		repo.Tag(t, "v1.0.0")
		if got := repo.ForcePush(t, "HEAD~1"); got != v1 {
			t.Errorf("ForcePush returned %s, want %s", got, v1)
		}
		refs := lsRemote(t, repo.URL())
		if refs["refs/heads/main"] != v1 {
			t.Errorf("main = %s after force-push, want %s", refs["refs/heads/main"], v1)
		}
		if refs["refs/tags/v1.0.0"] != v2 {
			t.Errorf("v1.0.0 = %s after moving it, want %s", refs["refs/tags/v1.0.0"], v2)
		}
	})
}

func TestServerCountsRequests(t *testing.T) {
	srv := Start(t, Options{})
	repo := srv.CreateRepo(t, "app")
	other := srv.CreateRepo(t, "other")
	repo.Commit(t, map[string]string{"app.yaml": "v: 1\n"}, "v1")
	other.Commit(t, map[string]string{"app.yaml": "v: 1\n"}, "v1")

	t.Run("the helpers' own pushes are not counted", func(t *testing.T) {
		if diff := cmp.Diff(Requests{}, srv.Requests()); diff != "" {
			t.Errorf("requests after helper commits (-want +got):\n%s", diff)
		}
	})

	t.Run("a v2 ls-remote is one ref listing, one ls-refs and no fetch", func(t *testing.T) {
		Git(t, "", "-c", "protocol.version=2", "ls-remote", repo.URL())
		want := Requests{RefListings: 1, LsRefs: 1}
		if diff := cmp.Diff(want, repo.Requests()); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
	})

	t.Run("a v0 ls-remote, as go-git does it, is a single ref listing", func(t *testing.T) {
		before := repo.Requests()
		Git(t, "", "-c", "protocol.version=0", "ls-remote", repo.URL())
		want := Requests{RefListings: before.RefListings + 1, LsRefs: before.LsRefs}
		if diff := cmp.Diff(want, repo.Requests()); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
	})

	t.Run("go-git lists refs with a single request", func(t *testing.T) {
		before := repo.Requests()
		remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{repo.URL()}})
		refs, err := remote.List(&git.ListOptions{})
		if err != nil {
			t.Fatalf("go-git list %s: %v", repo.URL(), err)
		}
		if len(refs) == 0 {
			t.Errorf("go-git listed no refs")
		}
		want := before
		want.RefListings++
		if diff := cmp.Diff(want, repo.Requests()); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
	})

	t.Run("a clone fetches, and only the repository cloned counts it", func(t *testing.T) {
		before := repo.Requests()
		Git(t, "", "clone", "--quiet", repo.URL(), filepath.Join(t.TempDir(), "clone"))
		if got := repo.Requests(); got.Fetches != before.Fetches+1 {
			t.Errorf("fetches = %d after a clone, want %d", got.Fetches, before.Fetches+1)
		}
		if diff := cmp.Diff(Requests{}, other.Requests()); diff != "" {
			t.Errorf("requests of the repository nobody read (-want +got):\n%s", diff)
		}
	})
}

func TestServerAuthentication(t *testing.T) {
	srv := Start(t, Options{Username: "tether", Password: "s3cret", BearerToken: "t0ken"})
	repo := srv.CreateRepo(t, "private")
	head := repo.Commit(t, map[string]string{"app.yaml": "v: 1\n"}, "v1")

	t.Run("a client without credentials is refused", func(t *testing.T) {
		_, err := runGit(t.TempDir(), "", "ls-remote", repo.URL())
		if err == nil || !strings.Contains(err.Error(), "Authentication failed") &&
			!strings.Contains(err.Error(), "could not read Username") {
			t.Errorf("ls-remote without credentials: error %v, want an authentication failure", err)
		}
		if got := repo.Requests(); got.Refused == 0 || got.LsRefs != 0 {
			t.Errorf("requests = %+v, want refusals and no ref listing served", got)
		}
	})

	t.Run("a wrong password is refused", func(t *testing.T) {
		if _, err := runGit(t.TempDir(), "", "ls-remote", withUser(repo.URL(), "tether", "wrong")); err == nil {
			t.Errorf("ls-remote with a wrong password succeeded")
		}
	})

	t.Run("basic credentials are accepted", func(t *testing.T) {
		refs := lsRemote(t, withUser(repo.URL(), "tether", "s3cret"))
		if refs["refs/heads/main"] != head {
			t.Errorf("main = %q, want %s", refs["refs/heads/main"], head)
		}
	})

	t.Run("a bearer token is accepted", func(t *testing.T) {
		out := Git(t, "", "-c", "http.extraHeader=Authorization: Bearer t0ken", "ls-remote", repo.URL(), "refs/heads/main")
		if !strings.HasPrefix(out, head) {
			t.Errorf("ls-remote with a token = %q, want main at %s", out, head)
		}
	})

	t.Run("go-git sends basic credentials with the first request", func(t *testing.T) {
		before := repo.Requests()
		remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{repo.URL()}})
		if _, err := remote.List(&git.ListOptions{Auth: &githttp.BasicAuth{Username: "tether", Password: "s3cret"}}); err != nil {
			t.Fatalf("go-git list with basic credentials: %v", err)
		}
		if got := repo.Requests(); got.Refused != before.Refused || got.RefListings != before.RefListings+1 {
			t.Errorf("requests = %+v after %+v, want one more ref listing and no refusal", got, before)
		}
	})

	t.Run("the file URL bypasses the server", func(t *testing.T) {
		refs := lsRemote(t, repo.FileURL())
		if refs["refs/heads/main"] != head {
			t.Errorf("main = %q over file://, want %s", refs["refs/heads/main"], head)
		}
	})
}

func TestNewLocalRepoServesFileURL(t *testing.T) {
	repo := NewLocalRepo(t, "local")
	head := repo.Commit(t, map[string]string{"app.yaml": "v: 1\n"}, "v1")
	if !strings.HasPrefix(repo.URL(), "file:///") {
		t.Fatalf("URL = %q, want a file:// URL", repo.URL())
	}
	clone := filepath.Join(t.TempDir(), "clone")
	Git(t, "", "clone", "--quiet", repo.URL(), clone)
	if got := Git(t, clone, "rev-parse", "HEAD"); got != head {
		t.Errorf("clone HEAD = %s, want %s", got, head)
	}
	if diff := cmp.Diff(Requests{}, repo.Requests()); diff != "" {
		t.Errorf("a local repository counted requests (-want +got):\n%s", diff)
	}
}

// lsRemote returns the refs of the repository at url, by name.
func lsRemote(t *testing.T, url string) map[string]string {
	t.Helper()
	refs := map[string]string{}
	for _, line := range strings.Split(Git(t, "", "ls-remote", url), "\n") {
		sha, name, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("ls-remote %s: unexpected line %q", url, line)
		}
		refs[name] = sha
	}
	return refs
}

func withUser(rawURL, user, password string) string {
	return strings.Replace(rawURL, "http://", "http://"+user+":"+password+"@", 1)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestServerServesSSH(t *testing.T) {
	srv := Start(t, Options{})
	_, client := NewSSHKey(t)
	_, stranger := NewSSHKey(t)
	ssh := srv.StartSSH(t, SSHOptions{AuthorizedKeys: []gossh.PublicKey{client.PublicKey()}})
	repo := srv.CreateRepo(t, "org/app")
	head := repo.Commit(t, map[string]string{"app.yaml": "v: 1\n"}, "v1")
	list := func(signer gossh.Signer) ([]*plumbing.Reference, error) {
		remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{ssh.URL("org/app")}})
		auth := &gitssh.PublicKeys{User: "git", Signer: signer}
		auth.HostKeyCallback = gossh.FixedHostKey(ssh.HostKey())
		return remote.List(&git.ListOptions{Auth: auth})
	}

	t.Run("an authorized key lists refs in one session, counted as a ref listing", func(t *testing.T) {
		refs, err := list(client)
		if err != nil {
			t.Fatalf("listing over SSH: %v", err)
		}
		found := false
		for _, r := range refs {
			found = found || (r.Name() == "refs/heads/main" && r.Hash().String() == head)
		}
		if !found {
			t.Errorf("refs = %v, want main at %s", refs, head)
		}
		if diff := cmp.Diff(Requests{RefListings: 1}, repo.Requests()); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
		if repo.Traffic().Sent == 0 {
			t.Errorf("traffic = %+v, want the advertisement counted", repo.Traffic())
		}
	})

	t.Run("a clone over SSH is a fetch", func(t *testing.T) {
		before := repo.Requests()
		dir := t.TempDir()
		auth := &gitssh.PublicKeys{User: "git", Signer: client}
		auth.HostKeyCallback = gossh.FixedHostKey(ssh.HostKey())
		if _, err := git.PlainClone(dir, true, &git.CloneOptions{URL: ssh.URL("org/app"), Auth: auth}); err != nil {
			t.Fatalf("cloning over SSH: %v", err)
		}
		if got := repo.Requests(); got.Fetches != before.Fetches+1 {
			t.Errorf("fetches = %d after a clone, want %d", got.Fetches, before.Fetches+1)
		}
	})

	t.Run("another key is refused", func(t *testing.T) {
		if _, err := list(stranger); err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
			t.Errorf("listing with an unknown key: error %v, want an authentication failure", err)
		}
		if got := srv.Requests().Refused; got == 0 {
			t.Errorf("refused = 0, want the stranger's key counted")
		}
	})

	t.Run("the known_hosts line names the host and port", func(t *testing.T) {
		if line := string(ssh.KnownHosts()); !strings.HasPrefix(line, "[127.0.0.1]:") || !strings.Contains(line, "ssh-ed25519 ") {
			t.Errorf("known_hosts line = %q", line)
		}
	})
}

func TestServerServesHTTPS(t *testing.T) {
	srv := Start(t, Options{TLS: true})
	repo := srv.CreateRepo(t, "app")
	repo.Commit(t, map[string]string{"app.yaml": "v: 1\n"}, "v1")
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{repo.URL()}})
	if !strings.HasPrefix(repo.URL(), "https://") {
		t.Fatalf("URL = %s, want https://", repo.URL())
	}
	if _, err := remote.List(&git.ListOptions{}); err == nil {
		t.Errorf("a client without the test authority listed refs")
	}
	if _, err := remote.List(&git.ListOptions{CABundle: srv.CACert()}); err != nil {
		t.Errorf("a client trusting CACert: %v", err)
	}
}
