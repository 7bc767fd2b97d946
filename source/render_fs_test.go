package source_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
)

// Git, kubectl and kustomize on disk take any file name; the agent copies a
// commit into memory before it renders, and must take the same names.
func TestTheAgentRendersFilesOfAnyNameGitHolds(t *testing.T) {
	repo := gitserver.NewLocalRepo(t, "names")
	head := pushTree(t, repo, map[string]string{
		"plain/notes copy.txt": "not a manifest",
		"plain/logo@2x.png":    "\x89PNG",
		"plain/café.md":        "# café",
		"plain/web app.yaml":   configMap("web", "hello"),
		"kust/kustomization.yaml": "resources: [base@v2]\n" +
			"configMapGenerator:\n- name: menu\n  files: [café.md, \"notes copy.txt\"]\n  options: {disableNameSuffixHash: true}\n",
		"kust/café.md":                    "# café",
		"kust/notes copy.txt":             "notes",
		"kust/base@v2/kustomization.yaml": "resources: [\"ein Ö.yaml\"]\n",
		"kust/base@v2/ein Ö.yaml":         configMap("base", "from-base-at-v2"),
	}, nil)
	src := newSource(t, source.Options{})
	rev := fetch(t, src, source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Commit: head}})

	t.Run("a plain directory with names outside [a-zA-Z0-9-_.:] renders its manifests", func(t *testing.T) {
		if diff := cmp.Diff([]string{"ConfigMap/web greeting=hello"}, rendered(t, src, rev, "plain")); diff != "" {
			t.Errorf("objects at plain (-want +got):\n%s", diff)
		}
	})
	t.Run("a kustomization reads a local base named base@v2 and generator files of any name", func(t *testing.T) {
		snap, err := src.Render(t.Context(), rev, "kust", source.Helm{})
		if err != nil {
			t.Fatalf("Render kust: %v", err)
		}
		got := describe(snap.Objects)
		if diff := cmp.Diff([]string{"ConfigMap/base greeting=from-base-at-v2", "ConfigMap/menu greeting="}, got); diff != "" {
			t.Errorf("objects at kust (-want +got):\n%s", diff)
		}
		data, _ := snap.Objects[1].Object["data"].(map[string]any)
		if data["café.md"] != "# café" || data["notes copy.txt"] != "notes" {
			t.Errorf("generated data = %v, want café.md and notes copy.txt", data)
		}
	})
}
