package source_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
			snap, err := src.Render(t.Context(), rev, r.dir, source.Helm{})
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

func TestRenderResultsAreCachedAndOwnTheirMetadata(t *testing.T) {
	repo := gitserver.NewLocalRepo(t, "deploy")
	repo.Commit(t, map[string]string{"app/cm.yaml": configMap("web", "hello")}, "add web")
	src := newSource(t, source.Options{})
	rev := fetch(t, src, source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Branch: "main"}})

	first, err := src.Render(t.Context(), rev, "app", source.Helm{})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	second, err := src.Render(t.Context(), rev, "./app/", source.Helm{})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}

	t.Run("rendering the same revision and path twice gives equal objects", func(t *testing.T) {
		if diff := cmp.Diff(first, second); diff != "" {
			t.Errorf("second render (-first +second):\n%s", diff)
		}
	})

	t.Run("marking and placing one result changes neither the other nor the next render", func(t *testing.T) {
		// What the agent does to a snapshot's objects before applying them.
		want := second.Objects[0].DeepCopy()
		o := first.Objects[0]
		o.SetName("renamed")
		o.SetNamespace("placed")
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["tether.dev/sync"] = "marked"
		o.SetLabels(labels)
		o.SetAnnotations(map[string]string{"tether.dev/owned-by": "ns/marked"})
		o.Object["kind"] = "Changed"
		if diff := cmp.Diff(want, second.Objects[0]); diff != "" {
			t.Errorf("second result after changing the first (-want +got):\n%s", diff)
		}
		next, err := src.Render(t.Context(), rev, "app", source.Helm{})
		if err != nil {
			t.Fatalf("Render: %v", err)
		}
		if diff := cmp.Diff(want, next.Objects[0]); diff != "" {
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

// TestKustomizeTreatsRepositoryContentAsHostile commits a kustomization for each way
// a repository could reach outside itself or exhaust the agent, next to a manifest
// and an executable on the host that a successful attack would read or run.
func TestKustomizeTreatsRepositoryContentAsHostile(t *testing.T) {
	host := t.TempDir()
	stolen := filepath.Join(host, "stolen.yaml")
	writeFile(t, stolen, configMap("stolen", "host-secret"))
	ran := filepath.Join(host, "ran")
	script := filepath.Join(host, "fn.sh")
	writeFile(t, script, "#!/bin/sh\ntouch "+ran+"\ncat\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	climb := strings.Repeat("../", 12) + strings.TrimPrefix(stolen, "/")
	kustomization := func(body string) string {
		return "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" + body
	}
	fn := func(kind string) string {
		return "apiVersion: example.com/v1\nkind: " + kind + "\nmetadata:\n  name: fn\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: " + script + "\n"
	}
	bomb := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\na: &a [x,x,x,x,x,x,x,x,x,x]\n"
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		bomb += name + ": &" + name + " [" + strings.Repeat("*"+prev+",", 9) + "*" + prev + "]\n"
		prev = name
	}
	files := map[string]string{
		"ok/kustomization.yaml":            kustomization("resources: [cm.yaml]\n"),
		"ok/cm.yaml":                       configMap("fine", "hello"),
		"secret.txt":                       "top-level file outside every kustomization root",
		"absolute/kustomization.yaml":      kustomization("resources: [\"" + stolen + "\"]\n"),
		"climb/kustomization.yaml":         kustomization("resources: [\"" + climb + "\"]\n"),
		"generator/kustomization.yaml":     kustomization("configMapGenerator:\n- name: stolen\n  files: [\"" + stolen + "\"]\n"),
		"restricted/kustomization.yaml":    kustomization("configMapGenerator:\n- name: sibling\n  files: [../secret.txt]\n"),
		"exec/kustomization.yaml":          kustomization("resources: [cm.yaml]\ntransformers: [fn.yaml]\n"),
		"exec/cm.yaml":                     configMap("fine", "hello"),
		"exec/fn.yaml":                     fn("Transformer"),
		"execgen/kustomization.yaml":       kustomization("generators: [fn.yaml]\n"),
		"execgen/fn.yaml":                  fn("Generator"),
		"helm/kustomization.yaml":          kustomization("helmCharts:\n- name: app\n  repo: https://charts.example.com\n  version: 1.0.0\n"),
		"bomb/kustomization.yaml":          kustomization("resources: [bomb.yaml]\n"),
		"bomb/bomb.yaml":                   bomb,
		"big/kustomization.yaml":           kustomization("resources: [cm.yaml]\n"),
		"big/cm.yaml":                      configMap("big", strings.Repeat("y", 4096)),
		"remote/kustomization.yaml":        kustomization("resources: [\"https://github.com/org/repo//base?ref=v1\"]\n"),
		"dir-link-user/kustomization.yaml": kustomization("resources: [etc/passwd]\n"),
	}
	repo := gitserver.NewLocalRepo(t, "hostile")
	head := pushTree(t, repo, files, map[string]string{"dir-link-user/etc": "/etc"})
	src := newSource(t, source.Options{MaxRenderedBytes: 2048})
	rev := fetch(t, src, source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Commit: head}})

	t.Run("a kustomization inside the repository renders", func(t *testing.T) {
		if diff := cmp.Diff([]string{"ConfigMap/fine greeting=hello"}, rendered(t, src, rev, "ok")); diff != "" {
			t.Errorf("objects (-want +got):\n%s", diff)
		}
	})

	refusals := []struct{ step, dir, file, says string }{
		{"spec.path climbing out of the repository", "../" + filepath.Base(host), "../" + filepath.Base(host), "leaves the repository"},
		{"an absolute spec.path", host, host, "must be relative"},
		{"a resource at an absolute path on the host", "absolute", "absolute/kustomization.yaml", "not found in the repository"},
		{"a resource climbing out of the repository", "climb", "climb/kustomization.yaml", "not found in the repository"},
		{"a generator reading a file on the host", "generator", "generator", "kustomize build"},
		{"a generator reading a file outside its kustomization root (never copied for rendering)", "restricted", "restricted", "'/secret.txt' doesn't exist"},
		{"an exec transformer", "exec", "exec", "plugins disabled"},
		{"an exec generator", "execgen", "execgen", "plugins disabled"},
		{"a Helm chart", "helm", "helm/kustomization.yaml", "helmCharts[0]: Helm charts in a kustomization are not rendered"},
		{"a YAML alias bomb", "bomb", "bomb/bomb.yaml", "too large"},
		{"output over the rendered-bytes limit", "big", "big", "limit of 2048 bytes"},
		{"a remote base", "remote", "remote/kustomization.yaml", "remote bases are disabled"},
		{"a symlinked directory to /etc", "dir-link-user", "dir-link-user/etc", "outside the repository"},
	}
	for _, r := range refusals {
		t.Run(r.step+" is refused, naming the file, and reads nothing outside", func(t *testing.T) {
			start := time.Now()
			snap, err := src.Render(t.Context(), rev, r.dir, source.Helm{})
			var re *source.RenderError
			if !errors.As(err, &re) {
				t.Fatalf("Render %s = %v, error %v; want a *source.RenderError", r.dir, snapshotObjects(snap), err)
			}
			if re.File != r.file || !strings.Contains(err.Error(), r.says) {
				t.Errorf("error %q names %q; want it to name %s and say %q", err, re.File, r.file, r.says)
			}
			if strings.Contains(err.Error(), "host-secret") {
				t.Errorf("error %q shows the content of a file on the host", err)
			}
			if elapsed := time.Since(start); elapsed > 10*time.Second {
				t.Errorf("refusing took %s; want it bounded", elapsed)
			}
		})
	}
	if _, err := os.Stat(ran); !os.IsNotExist(err) {
		t.Errorf("the exec function on the host ran (stat %s: %v)", ran, err)
	}
}

func TestRenderReadsOnlyWhatThePathNeeds(t *testing.T) {
	repo := gitserver.NewLocalRepo(t, "large")
	head := pushTree(t, repo, map[string]string{
		"base/kustomization.yaml":          "resources: [cm.yaml]\n",
		"base/cm.yaml":                     configMap("base", "from-base"),
		"overlays/prod/kustomization.yaml": "resources: [../../base]\nnamePrefix: prod-\n",
		"overlays/test/kustomization.yaml": "Resources: [../../base]\nnamePrefix: test-\n",
		"app/cm.yaml":                      configMap("web", "hello"),
		"data/a.bin":                       strings.Repeat("a", 6000),
		"data/b.bin":                       strings.Repeat("b", 6000),
	}, nil)
	// The repository holds 12 KB; one render may read 8 KB.
	src := newSource(t, source.Options{MaxTreeSize: 8000})
	rev := fetch(t, src, source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Commit: head}})

	t.Run("a small directory of a repository over the limit renders", func(t *testing.T) {
		if diff := cmp.Diff([]string{"ConfigMap/web greeting=hello"}, rendered(t, src, rev, "app")); diff != "" {
			t.Errorf("objects (-want +got):\n%s", diff)
		}
	})
	t.Run("an overlay renders with the base its kustomization names", func(t *testing.T) {
		if diff := cmp.Diff([]string{"ConfigMap/prod-base greeting=from-base"}, rendered(t, src, rev, "overlays/prod")); diff != "" {
			t.Errorf("objects (-want +got):\n%s", diff)
		}
	})
	t.Run("an overlay that spells Resources capitalised, as kustomize allows, renders with its base", func(t *testing.T) {
		if diff := cmp.Diff([]string{"ConfigMap/test-base greeting=from-base"}, rendered(t, src, rev, "overlays/test")); diff != "" {
			t.Errorf("objects (-want +got):\n%s", diff)
		}
	})
	t.Run("the whole repository is over the limit", func(t *testing.T) {
		_, err := src.Render(t.Context(), rev, ".", source.Helm{})
		if !source.IsRenderError(err) || !strings.Contains(err.Error(), "over the limit of 8000 bytes") {
			t.Errorf("Render . error = %v; want the limit on what one render reads", err)
		}
	})
}
