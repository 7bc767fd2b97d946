package source_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
)

func TestFetchFollowsABranch(t *testing.T) {
	transports := []struct {
		name    string
		newRepo func(t *testing.T) *gitserver.Repo
	}{
		{"over HTTP", func(t *testing.T) *gitserver.Repo {
			return gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "deploy")
		}},
		{"from a file URL", func(t *testing.T) *gitserver.Repo { return gitserver.NewLocalRepo(t, "deploy") }},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			repo := tr.newRepo(t)
			src := newSource(t, source.Options{})
			main := source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Branch: "main"}}
			first := repo.Commit(t, map[string]string{
				"apps/web/config.yaml": configMap("web-config", "hello"),
				"apps/other/cm.yaml":   configMap("other", "hi"),
			}, "add web")

			t.Run("a branch resolves to its newest commit and renders what was committed", func(t *testing.T) {
				rev := fetch(t, src, main)
				if got, want := rev.String(), "main@sha1:"+first; got != want {
					t.Errorf("revision = %s, want %s", got, want)
				}
				if diff := cmp.Diff([]string{"ConfigMap/web-config greeting=hello"}, rendered(t, src, rev, "apps/web")); diff != "" {
					t.Errorf("objects at apps/web (-want +got):\n%s", diff)
				}
			})

			t.Run("a new commit on the branch is seen by the next fetch", func(t *testing.T) {
				second := repo.Commit(t, map[string]string{"apps/web/config.yaml": configMap("web-config", "bonjour")}, "say bonjour")
				rev := fetch(t, src, main)
				if rev.Commit != second {
					t.Errorf("revision = %s, want commit %s", rev, second)
				}
				if diff := cmp.Diff([]string{"ConfigMap/web-config greeting=bonjour"}, rendered(t, src, rev, "apps/web")); diff != "" {
					t.Errorf("objects at apps/web (-want +got):\n%s", diff)
				}
			})

			t.Run("a force-pushed branch resolves to the rewritten history", func(t *testing.T) {
				repo.ForcePush(t, first)
				third := repo.Commit(t, map[string]string{"apps/web/config.yaml": configMap("web-config", "hola")}, "say hola instead")
				rev := fetch(t, src, main)
				if rev.Commit != third {
					t.Errorf("revision = %s, want commit %s", rev, third)
				}
				if diff := cmp.Diff([]string{"ConfigMap/web-config greeting=hola"}, rendered(t, src, rev, "apps/web")); diff != "" {
					t.Errorf("objects at apps/web (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestPollingAnUnchangedBranchIsCheap(t *testing.T) {
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "deploy")
	repo.Commit(t, map[string]string{"app/cm.yaml": configMap("web", "hello")}, "add web")
	cacheDir := t.TempDir()
	src := newSource(t, source.Options{CacheDir: cacheDir})
	req := source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Branch: "main"}}
	first := fetch(t, src, req)

	t.Run("a poll with no new commit costs one ref listing and no fetch", func(t *testing.T) {
		before := repo.Requests()
		if rev := fetch(t, src, req); rev != first {
			t.Errorf("revision = %s, want %s unchanged", rev, first)
		}
		want := before
		want.RefListings++
		if diff := cmp.Diff(want, repo.Requests()); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
	})

	t.Run("callers sharing a URL and ref within MaxAge share one ref listing", func(t *testing.T) {
		shared := req
		shared.MaxAge = time.Hour
		fetch(t, src, shared) // resolves afresh: the last resolution has no MaxAge promise
		before := repo.Requests()
		for i := 0; i < 100; i++ {
			if rev := fetch(t, src, shared); rev != first {
				t.Fatalf("revision = %s, want %s", rev, first)
			}
		}
		if diff := cmp.Diff(before, repo.Requests()); diff != "" {
			t.Errorf("100 fetches within MaxAge asked the server (-before +after):\n%s", diff)
		}
		newer := repo.Commit(t, map[string]string{"app/cm.yaml": configMap("web", "hi")}, "change")
		if rev := fetch(t, src, req); rev.Commit != newer {
			t.Errorf("a fetch without MaxAge returned %s, want the new commit %s", rev.Commit, newer)
		}
	})

	t.Run("the first poll after a restart does not fetch either", func(t *testing.T) {
		restarted := newSource(t, source.Options{CacheDir: cacheDir})
		before := repo.Requests()
		fetch(t, restarted, req)
		if got := repo.Requests(); got.Fetches != before.Fetches {
			t.Errorf("fetches went from %d to %d with the commit already cached", before.Fetches, got.Fetches)
		}
	})
}

func TestFetchResolvesTagsAndCommits(t *testing.T) {
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "deploy")
	tagged := repo.Commit(t, map[string]string{"app/cm.yaml": configMap("web", "v1")}, "release 1")
	repo.Tag(t, "v1.0.0")
	repo.AnnotatedTag(t, "v1.1.0", "release 1.1.0")
	head := repo.Commit(t, map[string]string{"app/cm.yaml": configMap("web", "v2")}, "work after the release")
	src := newSource(t, source.Options{})

	for _, tag := range []string{"v1.0.0", "v1.1.0"} {
		t.Run("tag "+tag+" resolves to the tagged commit", func(t *testing.T) {
			rev := fetch(t, src, source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Tag: tag}})
			if got, want := rev.String(), tag+"@sha1:"+tagged; got != want {
				t.Errorf("revision = %s, want %s", got, want)
			}
			if diff := cmp.Diff([]string{"ConfigMap/web greeting=v1"}, rendered(t, src, rev, "app")); diff != "" {
				t.Errorf("objects at the tag (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("a pinned commit resolves to itself", func(t *testing.T) {
		fresh := newSource(t, source.Options{})
		rev := fetch(t, fresh, source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Commit: head}})
		if got, want := rev.String(), "sha1:"+head; got != want {
			t.Errorf("revision = %s, want %s", got, want)
		}
		if diff := cmp.Diff([]string{"ConfigMap/web greeting=v2"}, rendered(t, fresh, rev, "app")); diff != "" {
			t.Errorf("objects at the commit (-want +got):\n%s", diff)
		}
	})

	t.Run("an unknown commit is CommitNotFound", func(t *testing.T) {
		unknown := strings.Repeat("0123456789", 4)
		_, err := src.Fetch(t.Context(), source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Commit: unknown}})
		if reason := fetchReason(t, err); reason != source.ReasonCommitNotFound {
			t.Errorf("reason = %s, want %s (error %v)", reason, source.ReasonCommitNotFound, err)
		}
	})
}

func TestFetchFailuresSayWhatIsWrong(t *testing.T) {
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "deploy")
	repo.Commit(t, map[string]string{"app/cm.yaml": configMap("web", "hello")}, "add web")
	src := newSource(t, source.Options{})

	t.Run("a branch that does not exist is RefNotFound, naming the ref and the URL", func(t *testing.T) {
		_, err := src.Fetch(t.Context(), source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Branch: "nope"}})
		if reason := fetchReason(t, err); reason != source.ReasonRefNotFound {
			t.Errorf("reason = %s, want %s (error %v)", reason, source.ReasonRefNotFound, err)
		}
		want := repo.URL() + " (ref nope): the remote has no branch nope: check the name, or push it"
		if msg := err.Error(); msg != want {
			t.Errorf("error %q; want %q", msg, want)
		}
	})

	t.Run("a branch deleted after it was followed is RefNotFound", func(t *testing.T) {
		repo.CreateBranch(t, "staging")
		staging := source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Branch: "staging"}}
		fetch(t, src, staging)
		gitserver.Git(t, "", "--git-dir", repo.Dir(), "update-ref", "-d", "refs/heads/staging")
		_, err := src.Fetch(t.Context(), staging)
		if reason := fetchReason(t, err); reason != source.ReasonRefNotFound {
			t.Errorf("reason = %s, want %s (error %v)", reason, source.ReasonRefNotFound, err)
		}
	})

	others := []struct{ step, url, reason string }{
		{"an unreachable host is HostUnreachable", "http://127.0.0.1:1/deploy.git", source.ReasonHostUnreachable},
		{"a host that cannot be resolved is HostUnreachable", "https://no-such-host.invalid/deploy.git", source.ReasonHostUnreachable},
		{"a repository the host does not have is RepositoryNotFound", strings.Replace(repo.URL(), "deploy.git", "nope.git", 1), source.ReasonRepositoryNotFound},
		{"a URL of an unknown scheme is UnsupportedURL", "ftp://example.com/deploy.git", source.ReasonUnsupportedURL},
	}
	for _, o := range others {
		t.Run(o.step, func(t *testing.T) {
			_, err := src.Fetch(t.Context(), source.Request{URL: o.url, Ref: main})
			if reason := fetchReason(t, err); reason != o.reason {
				t.Errorf("reason = %s, want %s (error %v)", reason, o.reason, err)
			}
		})
	}

	t.Run("a file:// URL is UnsupportedURL unless the agent allows it", func(t *testing.T) {
		local := gitserver.NewLocalRepo(t, "local")
		local.Commit(t, map[string]string{"cm.yaml": configMap("web", "hello")}, "add web")
		strict, err := source.New(source.Options{CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		_, err = strict.Fetch(t.Context(), source.Request{URL: local.FileURL(), Ref: main})
		if reason := fetchReason(t, err); reason != source.ReasonUnsupportedURL || !strings.Contains(err.Error(), "file system") {
			t.Errorf("reason = %s, want %s saying why (error %v)", reason, source.ReasonUnsupportedURL, err)
		}
		fetch(t, src, source.Request{URL: local.FileURL(), Ref: main}) // src allows them
	})
}

func TestFetchFollowsASemVerRange(t *testing.T) {
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "deploy")
	commits := map[string]string{}
	for _, tag := range []string{"v1.0.0", "v1.2.0", "v1.3.0-rc.1", "v2.0.0", "latest"} {
		commits[tag] = repo.Commit(t, map[string]string{"app/cm.yaml": configMap("web", tag)}, "release "+tag)
		if tag == "v1.2.0" {
			repo.AnnotatedTag(t, tag, "release "+tag)
			continue
		}
		repo.Tag(t, tag)
	}
	src := newSource(t, source.Options{})
	semver := func(r string) source.Request { return source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{SemVer: r}} }

	resolves := []struct{ step, rng, tag string }{
		{"the newest tag in the range wins, annotated tags peel, pre-releases are left out", ">=1.0 <2", "v1.2.0"},
		{"a range naming a pre-release admits it", ">=1.3.0-rc.0 <2", "v1.3.0-rc.1"},
		{"a range open above takes the newest release", ">=1", "v2.0.0"},
		{"a tilde range stays in its minor version", "~1.0", "v1.0.0"},
	}
	for _, r := range resolves {
		t.Run(r.step, func(t *testing.T) {
			rev := fetch(t, src, semver(r.rng))
			if got, want := rev.String(), r.tag+"@sha1:"+commits[r.tag]; got != want {
				t.Errorf("%q resolved to %s, want %s", r.rng, got, want)
			}
			if diff := cmp.Diff([]string{"ConfigMap/web greeting=" + r.tag}, rendered(t, src, rev, "app")); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("a new tag in the range moves the revision", func(t *testing.T) {
		repo.Commit(t, map[string]string{"app/cm.yaml": configMap("web", "v1.4.0")}, "release v1.4.0")
		newer := repo.Tag(t, "v1.4.0")
		if rev := fetch(t, src, semver(">=1.0 <2")); rev.String() != "v1.4.0@sha1:"+newer {
			t.Errorf("revision = %s, want v1.4.0@sha1:%s", rev, newer)
		}
	})

	t.Run("a moved tag moves the revision", func(t *testing.T) {
		moved := repo.Commit(t, map[string]string{"app/cm.yaml": configMap("web", "v1.4.0-fixed")}, "fix the release")
		repo.Tag(t, "v1.4.0")
		if rev := fetch(t, src, semver(">=1.0 <2")); rev.String() != "v1.4.0@sha1:"+moved {
			t.Errorf("revision = %s, want v1.4.0@sha1:%s", rev, moved)
		}
	})

	failures := []struct{ step, rng, reason, says string }{
		{"a range no tag satisfies is NoMatchingTag, naming the range", ">=3", source.ReasonNoMatchingTag, `no tag of the repository satisfies ">=3"`},
		{"a range that does not parse is InvalidSemVer", "not a range", source.ReasonInvalidSemVer, `semver range "not a range"`},
	}
	for _, f := range failures {
		t.Run(f.step, func(t *testing.T) {
			_, err := src.Fetch(t.Context(), semver(f.rng))
			if reason := fetchReason(t, err); reason != f.reason || !strings.Contains(err.Error(), f.says) {
				t.Errorf("error %q (reason %s), want reason %s saying %q", err, reason, f.reason, f.says)
			}
		})
	}
}

func TestFetchKeepsCredentialsOutOfMessages(t *testing.T) {
	repo := gitserver.Start(t, gitserver.Options{Username: "tether", Password: "s3cret"}).CreateRepo(t, "private")
	head := repo.Commit(t, map[string]string{"app/cm.yaml": configMap("web", "hello")}, "add web")
	cacheDir := t.TempDir()
	src := newSource(t, source.Options{CacheDir: cacheDir})

	t.Run("credentials written into the URL reach a server that requires them", func(t *testing.T) {
		rev := fetch(t, src, source.Request{URL: withUser(repo.URL(), "tether:s3cret"), Ref: main})
		if rev.Commit != head {
			t.Errorf("revision = %s, want commit %s", rev, head)
		}
		if got := repo.Requests().Refused; got != 0 {
			t.Errorf("%d requests were refused, want the credentials sent from the first request on", got)
		}
	})

	t.Run("the cache on disk does not store them", func(t *testing.T) {
		err := filepath.WalkDir(cacheDir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err == nil && strings.Contains(string(data), "s3cret") {
				t.Errorf("%s holds the password", p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	failures := []struct{ step, url, secret string }{
		{"a wrong password is not shown", withUser(repo.URL(), "tether:wr0ng-pass"), "wr0ng-pass"},
		{"a password for an unreachable server is not shown", "http://user:secret@127.0.0.1:1/x.git", "secret"},
		{"a token written as the user name is not shown", "http://t0ken-as-user@127.0.0.1:1/x.git", "t0ken-as-user"},
	}
	for _, f := range failures {
		t.Run(f.step, func(t *testing.T) {
			_, err := src.Fetch(t.Context(), source.Request{URL: f.url, Ref: main})
			fetchReason(t, err)
			if strings.Contains(err.Error(), f.secret) {
				t.Errorf("error %q shows %q", err, f.secret)
			}
		})
	}
}

func TestFetchRecoversFromACorruptCache(t *testing.T) {
	corruptions := map[string]func(t *testing.T, gitDir string){
		"the git directory is overwritten with garbage": func(t *testing.T, gitDir string) {
			overwriteFiles(t, gitDir)
		},
		"the objects are lost but refs and config remain": func(t *testing.T, gitDir string) {
			overwriteFiles(t, filepath.Join(gitDir, "objects"))
		},
	}
	for name, corrupt := range corruptions {
		t.Run(name+": a new source re-clones and renders", func(t *testing.T) {
			repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "deploy")
			head := repo.Commit(t, map[string]string{"app/cm.yaml": configMap("web", "hello")}, "add web")
			req := source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Branch: "main"}}
			cacheDir := t.TempDir()
			fetch(t, newSource(t, source.Options{CacheDir: cacheDir}), req)

			corrupt(t, cacheGitDir(t, cacheDir))
			second := newSource(t, source.Options{CacheDir: cacheDir})
			rev := fetch(t, second, req)
			if rev.Commit != head {
				t.Errorf("revision = %s, want commit %s", rev, head)
			}
			if diff := cmp.Diff([]string{"ConfigMap/web greeting=hello"}, rendered(t, second, rev, "app")); diff != "" {
				t.Errorf("objects after recovery (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderRecoversFromACacheDamagedWhileRunning(t *testing.T) {
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "deploy")
	head := repo.Commit(t, map[string]string{"app/cm.yaml": configMap("web", "hello")}, "add web")
	cacheDir := t.TempDir()
	src := newSource(t, source.Options{CacheDir: cacheDir})
	req := source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Branch: "main"}}
	rev := fetch(t, src, req)

	overwriteFiles(t, filepath.Join(cacheGitDir(t, cacheDir), "objects"))
	t.Run("rendering from the damaged cache is CacheUnreadable", func(t *testing.T) {
		_, err := src.Render(t.Context(), rev, "app", source.Helm{})
		if reason := fetchReason(t, err); reason != source.ReasonCacheUnreadable {
			t.Errorf("reason = %s, want %s (error %v)", reason, source.ReasonCacheUnreadable, err)
		}
	})
	t.Run("the next fetch clones afresh and the commit renders", func(t *testing.T) {
		again := fetch(t, src, req)
		if again.Commit != head {
			t.Errorf("revision = %s, want commit %s", again, head)
		}
		if diff := cmp.Diff([]string{"ConfigMap/web greeting=hello"}, rendered(t, src, again, "app")); diff != "" {
			t.Errorf("objects after recovery (-want +got):\n%s", diff)
		}
	})
}

// newSource makes a Source; an empty CacheDir becomes a fresh temporary directory.
// It allows file:// URLs, which the local repositories of tests have.
func newSource(t *testing.T, opts source.Options) *source.Source {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = t.TempDir()
	}
	opts.AllowFileURLs = true
	s, err := source.New(opts)
	if err != nil {
		t.Fatalf("source.New: %v", err)
	}
	return s
}

// fetch fetches req and fails the test on error.
func fetch(t *testing.T, s *source.Source, req source.Request) source.Revision {
	t.Helper()
	rev, err := s.Fetch(t.Context(), req)
	if err != nil {
		t.Fatalf("Fetch %s %s: %v", req.URL, req.Ref, err)
	}
	return rev
}

// rendered renders dir of rev and describes each object as "Kind/name greeting=…".
func rendered(t *testing.T, s *source.Source, rev source.Revision, dir string) []string {
	t.Helper()
	snap, err := s.Render(t.Context(), rev, dir, source.Helm{})
	if err != nil {
		t.Fatalf("Render %s %s: %v", rev, dir, err)
	}
	return describe(snap.Objects)
}

func describe(objs []*unstructured.Unstructured) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		greeting, _, _ := unstructured.NestedString(o.Object, "data", "greeting")
		out[i] = fmt.Sprintf("%s/%s greeting=%s", o.GetKind(), o.GetName(), greeting)
	}
	return out
}

// fetchReason returns the Reason of err, failing the test unless err is a *FetchError.
func fetchReason(t *testing.T, err error) string {
	t.Helper()
	var fe *source.FetchError
	if !errors.As(err, &fe) {
		t.Fatalf("error = %v, want a *source.FetchError", err)
	}
	return fe.Reason
}

// withUser writes userinfo ("user:password") into an http:// URL.
func withUser(rawURL, userinfo string) string {
	return strings.Replace(rawURL, "http://", "http://"+userinfo+"@", 1)
}

func configMap(name, greeting string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  greeting: %s\n", name, greeting)
}

// cacheGitDir returns the one repository cached under cacheDir.
func cacheGitDir(t *testing.T, cacheDir string) string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(cacheDir, "git", "*"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("cached repositories under %s = %v (%v), want exactly one", cacheDir, dirs, err)
	}
	return dirs[0]
}

// overwriteFiles replaces the content of every file under dir with garbage, the way
// a crash mid-write or a full disk leaves a cache.
func overwriteFiles(t *testing.T, dir string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		if err := os.Chmod(p, 0o600); err != nil {
			return err
		}
		return os.WriteFile(p, []byte("corrupt"), 0o600)
	})
	if err != nil || n == 0 {
		t.Fatalf("corrupting %s: %d files, error %v", dir, n, err)
	}
}
