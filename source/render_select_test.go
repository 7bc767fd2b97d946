package source_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
)

// selectTree is a plain path with files at its top, in subdirectories, and a
// subdirectory holding a kustomization.
var selectTree = map[string]string{
	"apps/a.yaml":                      configMap("a", "top"),
	"apps/b.yml":                       configMap("b", "top"),
	"apps/config.json":                 `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "config"}}`,
	"apps/sub/c.yaml":                  configMap("c", "sub"),
	"apps/env-usw2/d.yaml":             configMap("d", "env"),
	"apps/built/kustomization.yaml":    "resources: [k.yaml]\n",
	"apps/built/k.yaml":                configMap("k", "built"),
	"kustomized/kustomization.yaml":    "resources: [k.yaml]\n",
	"kustomized/k.yaml":                configMap("k", "built"),
	"kustomized/not-a-resource.yaml":   configMap("n", "never"),
	"kustomized/sub/also-not-one.yaml": configMap("m", "never"),
}

// TestRenderSelectsFilesAsArgoCDDirectory: spec.source.directory's recurse,
// include and exclude select what a plain path renders, as Argo CD's
// directory options do; a path with a kustomization is built whole; a glob
// that does not compile fails naming its field; each selection is a render
// of its own in the cache.
func TestRenderSelectsFilesAsArgoCDDirectory(t *testing.T) {
	repo := gitserver.NewLocalRepo(t, "select")
	head := pushTree(t, repo, selectTree, nil)
	src := newSource(t, source.Options{})
	rev := fetch(t, src, source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Commit: head}})
	names := func(t *testing.T, dir string, sel source.Directory) []string {
		t.Helper()
		snap, err := src.RenderSelected(t.Context(), rev, dir, sel, source.Helm{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range snap.Objects {
			out = append(out, o.GetName())
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		step string
		sel  source.Directory
		want []string
	}{
		{"no selection reads everything, recursively", source.Directory{}, []string{"a", "b", "c", "config", "d", "k"}},
		{"recurse false reads the top level alone", source.Directory{NoRecurse: true}, []string{"a", "b", "config"}},
		{"include *.yaml matches in subdirectories too", source.Directory{Include: "*.yaml"}, []string{"a", "c", "d"}},
		{"exclude {config.json,env-usw2/*}, as Argo CD's documentation writes it", source.Directory{Exclude: "{config.json,env-usw2/*}"}, []string{"a", "b", "c", "k"}},
		{"exclude wins over include; a kustomization is selected by its directory", source.Directory{Include: "{a.yaml,sub/*,built}", Exclude: "sub/*"}, []string{"a", "k"}},
	} {
		t.Run(c.step, func(t *testing.T) {
			if diff := cmp.Diff(c.want, names(t, "apps", c.sel)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("a path with a kustomization is built whole", func(t *testing.T) {
		if diff := cmp.Diff([]string{"k"}, names(t, "kustomized", source.Directory{NoRecurse: true, Exclude: "k.yaml"})); diff != "" {
			t.Errorf("objects (-want +got):\n%s", diff)
		}
	})
	t.Run("a glob that does not compile fails naming its field", func(t *testing.T) {
		_, err := src.RenderSelected(t.Context(), rev, "apps", source.Directory{Include: "[a"}, source.Helm{}, nil)
		if !source.IsRenderError(err) || !strings.Contains(err.Error(), "spec.source.directory.include") {
			t.Errorf("got %v; want a RenderError naming spec.source.directory.include", err)
		}
	})
}

func TestDirectoryOf(t *testing.T) {
	no := false
	for _, c := range []struct {
		in   *v1alpha1.DirectorySpec
		want source.Directory
	}{
		{nil, source.Directory{}},
		{&v1alpha1.DirectorySpec{}, source.Directory{}},
		{&v1alpha1.DirectorySpec{Recurse: &no, Include: "*.yaml", Exclude: "x"}, source.Directory{NoRecurse: true, Include: "*.yaml", Exclude: "x"}},
	} {
		if got := source.DirectoryOf(c.in); got != c.want {
			t.Errorf("DirectoryOf(%+v) = %+v; want %+v", c.in, got, c.want)
		}
	}
}
