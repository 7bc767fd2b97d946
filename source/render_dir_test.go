package source_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"tether.dev/tether/source"
)

func TestRenderDirectoryReadsADirectoryAsTheAgentReadsACommit(t *testing.T) {
	repo := t.TempDir()
	outside := filepath.Join(t.TempDir(), "stolen.yaml")
	writeFile(t, outside, configMap("stolen", "secret"))
	writeFile(t, filepath.Join(repo, ".git", "config"), "[core]\n")
	writeFile(t, filepath.Join(repo, "base", "kustomization.yaml"), "resources: [cm.yaml]\n")
	writeFile(t, filepath.Join(repo, "base", "cm.yaml"), configMap("base", "from-base"))
	writeFile(t, filepath.Join(repo, "apps", "web", "kustomization.yaml"), "resources: [../../base, cm.yaml]\n")
	writeFile(t, filepath.Join(repo, "apps", "web", "cm.yaml"), configMap("web", "hello"))
	writeFile(t, filepath.Join(repo, "broken", "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [oops\n")
	writeFile(t, filepath.Join(repo, "linked", "cm.yaml"), configMap("linked", "hi"))
	if err := os.Symlink(outside, filepath.Join(repo, "linked", "stolen.yaml")); err != nil {
		t.Fatal(err)
	}
	small := source.DefaultOptions()
	small.MaxFileSize = 32 << 10 // a file of .git over it would fail the render, were it read

	t.Run("a kustomization reaches anything inside the git work tree, and nothing of .git is read", func(t *testing.T) {
		objs, err := source.RenderDirectory(t.Context(), filepath.Join(repo, "apps", "web"), source.Helm{}, small)
		if err != nil {
			t.Fatalf("RenderDirectory apps/web: %v", err)
		}
		if diff := cmp.Diff([]string{"ConfigMap/base greeting=from-base", "ConfigMap/web greeting=hello"}, describe(objs)); diff != "" {
			t.Errorf("objects (-want +got):\n%s", diff)
		}
	})
	t.Run("rendering the work tree's root reads nothing of .git", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, ".git", "objects", "huge.yaml"), strings.Repeat("x", 64<<10))
		writeFile(t, filepath.Join(root, "cm.yaml"), configMap("root", "hi"))
		objs, err := source.RenderDirectory(t.Context(), root, source.Helm{}, small)
		if err != nil {
			t.Fatalf("RenderDirectory of a work tree's root: %v", err)
		}
		if diff := cmp.Diff([]string{"ConfigMap/root greeting=hi"}, describe(objs)); diff != "" {
			t.Errorf("objects (-want +got):\n%s", diff)
		}
	})
	t.Run("errors name files from the work tree's root, as the agent names them", func(t *testing.T) {
		_, err := source.RenderDirectory(t.Context(), filepath.Join(repo, "broken"), source.Helm{}, small)
		var re *source.RenderError
		if !errors.As(err, &re) || re.File != "broken/cm.yaml" {
			t.Errorf("RenderDirectory broken = %v, want a RenderError naming broken/cm.yaml", err)
		}
	})
	t.Run("a symlink out of the work tree fails the render and reads nothing", func(t *testing.T) {
		objs, err := source.RenderDirectory(t.Context(), filepath.Join(repo, "linked"), source.Helm{}, small)
		var re *source.RenderError
		if !errors.As(err, &re) || re.File != "linked/stolen.yaml" || !strings.Contains(err.Error(), "outside the repository") {
			t.Errorf("RenderDirectory linked = %v, %v; want a RenderError naming linked/stolen.yaml", describe(objs), err)
		}
	})
}
