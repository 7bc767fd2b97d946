package source_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
)

func TestRenderTreatsRepositoryContentAsHostile(t *testing.T) {
	// A manifest outside the repository that a link must not be able to smuggle in.
	outside := filepath.Join(t.TempDir(), "stolen.yaml")
	if err := os.WriteFile(outside, []byte(configMap("stolen", "secret")), 0o600); err != nil {
		t.Fatal(err)
	}
	const maxFile = 2048
	huge := configMap("huge", strings.Repeat("x", 2*maxFile))
	repo := gitserver.NewLocalRepo(t, "hostile")
	head := pushTree(t, repo, map[string]string{
		"app/cm.yaml":        configMap("web", "hello"),
		"shared/cm.yaml":     configMap("shared", "from-shared"),
		"big/huge.yaml":      huge,
		"oversized/cm.yaml":  huge,
		"link-to-big/a.yaml": configMap("other", "hi"),
	}, map[string]string{
		"app/shared.yaml":          "../shared/cm.yaml",
		"climb/passwd.yaml":        "../../../../etc/passwd",
		"absolute/stolen.yaml":     outside,
		"link-to-big/cm.yaml":      "../big/huge.yaml",
		"absolute-etc/passwd.yaml": "/etc/passwd",
	})
	src := newSource(t, source.Options{MaxFileSize: maxFile})
	rev := fetch(t, src, source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Commit: head}})

	t.Run("a symlink to a file elsewhere in the repository renders as that file", func(t *testing.T) {
		want := []string{"ConfigMap/web greeting=hello", "ConfigMap/shared greeting=from-shared"}
		if diff := cmp.Diff(want, rendered(t, src, rev, "app")); diff != "" {
			t.Errorf("objects at app (-want +got):\n%s", diff)
		}
	})

	refusals := []struct{ step, dir, file, says string }{
		{"a symlink climbing out of the repository fails the render, naming the link", "climb", "climb/passwd.yaml", "outside the repository"},
		{"an absolute symlink to /etc fails the render, naming the link", "absolute-etc", "absolute-etc/passwd.yaml", "outside the repository"},
		{"an absolute symlink to a manifest on the host fails and reads nothing", "absolute", "absolute/stolen.yaml", "outside the repository"},
		{"a file over the size limit fails the render, naming the file", "oversized", "oversized/cm.yaml", "over the limit"},
		{"a symlink to a file over the size limit fails the render too", "link-to-big", "link-to-big/cm.yaml", "over the limit"},
	}
	for _, r := range refusals {
		t.Run(r.step, func(t *testing.T) {
			snap, err := src.Render(t.Context(), rev, r.dir)
			var re *source.RenderError
			if !errors.As(err, &re) {
				t.Fatalf("Render %s = %v, error %v; want a *source.RenderError", r.dir, snapshotObjects(snap), err)
			}
			if re.File != r.file || !strings.Contains(err.Error(), r.says) {
				t.Errorf("error %q names %q; want it to name %s and say %q", err, re.File, r.file, r.says)
			}
		})
	}
}

func TestRenderResultsAreCachedCopies(t *testing.T) {
	repo := gitserver.NewLocalRepo(t, "deploy")
	repo.Commit(t, map[string]string{"app/cm.yaml": configMap("web", "hello")}, "add web")
	src := newSource(t, source.Options{})
	rev := fetch(t, src, source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Branch: "main"}})

	first, err := src.Render(t.Context(), rev, "app")
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	second, err := src.Render(t.Context(), rev, "./app/")
	if err != nil {
		t.Fatalf("Render: %v", err)
	}

	t.Run("rendering the same revision and path twice gives equal objects", func(t *testing.T) {
		if diff := cmp.Diff(first, second); diff != "" {
			t.Errorf("second render (-first +second):\n%s", diff)
		}
	})

	t.Run("changing one result changes neither the other nor the next render", func(t *testing.T) {
		want := describe(second.Objects)
		first.Objects[0].Object["data"].(map[string]any)["greeting"] = "tampered"
		first.Objects[0].SetName("tampered")
		if diff := cmp.Diff(want, describe(second.Objects)); diff != "" {
			t.Errorf("second result after changing the first (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, rendered(t, src, rev, "app")); diff != "" {
			t.Errorf("next render after changing the first (-want +got):\n%s", diff)
		}
	})
}

// pushTree commits files and symlinks (path → target) to repo from a clone of its
// own, the way a user would push them, and returns the commit. The Repo helpers write
// regular files only; repo's own helpers must not commit to it afterwards.
func pushTree(t *testing.T, repo *gitserver.Repo, files, links map[string]string) string {
	t.Helper()
	work := t.TempDir()
	gitserver.Git(t, work, "init", "--quiet", "--initial-branch=main")
	for name, content := range files {
		writeFile(t, filepath.Join(work, filepath.FromSlash(name)), content)
	}
	for name, target := range links {
		p := filepath.Join(work, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	gitserver.Git(t, work, "add", "--all")
	gitserver.Git(t, work, "commit", "--quiet", "--message", "hostile content")
	gitserver.Git(t, work, "push", "--quiet", "--force", repo.FileURL(), "HEAD:refs/heads/main")
	return gitserver.Git(t, work, "rev-parse", "HEAD")
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func snapshotObjects(s *source.Snapshot) []string {
	if s == nil {
		return nil
	}
	return describe(s.Objects)
}
