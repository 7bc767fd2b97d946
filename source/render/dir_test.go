package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"tether.dev/tether/source/result"
)

// memFS builds an in-memory repository from path → content.
func memFS(t *testing.T, files map[string]string) filesys.FileSystem {
	t.Helper()
	fs := NewFS()
	for name, content := range files {
		if err := fs.WriteFile("/"+name, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	return fs
}

// ids lists objects as "Kind/namespace/name" in render order.
func ids(objs []*unstructured.Unstructured) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
	}
	return out
}

func render(t *testing.T, files map[string]string, dir string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return Dir(memFS(t, files), "/", "/"+dir, DirOptions{MaxObjects: 100})
}

func TestRenderPlain(t *testing.T) {
	t.Run("reads every manifest file recursively in lexical order", func(t *testing.T) {
		objs, err := render(t, map[string]string{
			"app/b.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
			"app/a.yml":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n# only a comment\n---\napiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: web}\n",
			"app/nested/c.json":  `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}`,
			"app/README.md":      "not a manifest",
			"app/.github/ci.yml": "name: ci\non: push\n",
			"other/d.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\n",
		}, "app")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"ConfigMap//a", "Service/web/a", "ConfigMap//b", "ConfigMap//c"}
		if diff := cmp.Diff(want, ids(objs)); diff != "" {
			t.Errorf("rendered objects (-want +got):\n%s", diff)
		}
	})

	t.Run("keeps value types: integers, booleans, and date-like strings stay as written", func(t *testing.T) {
		objs, err := render(t, map[string]string{"cm.yaml": `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {release: 2024-01-01}}
spec:
  replicas: 3
  paused: false
`}, ".")
		if err != nil {
			t.Fatal(err)
		}
		replicas, _, _ := unstructured.NestedInt64(objs[0].Object, "spec", "replicas")
		paused, _, _ := unstructured.NestedBool(objs[0].Object, "spec", "paused")
		if replicas != 3 || paused {
			t.Errorf("spec = %v, want replicas 3 (int64) and paused false", objs[0].Object["spec"])
		}
		if got := objs[0].GetLabels()["release"]; got != "2024-01-01" {
			t.Errorf("label release = %q, want the date as written", got)
		}
	})

	t.Run("expands a List into its items", func(t *testing.T) {
		objs, err := render(t, map[string]string{"list.yaml": `
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: one}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: two}}
`}, ".")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"ConfigMap//one", "ConfigMap//two"}, ids(objs)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

func hookWithGenerateName(prefix string) string {
	return "apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: " + prefix + ", annotations: {argocd.argoproj.io/hook: PreSync}}\n"
}

func TestRenderKeepsHooksWithOnlyGenerateName(t *testing.T) {
	objs, err := render(t, map[string]string{"hooks.yaml": hookWithGenerateName("migrate-") + "---\n" + hookWithGenerateName("smoke-")}, ".")
	if err != nil {
		t.Fatalf("Dir(): %v: a hook may have only generateName (plan names it for its run)", err)
	}
	if len(objs) != 2 || objs[0].GetGenerateName() != "migrate-" || objs[1].GetGenerateName() != "smoke-" {
		t.Errorf("rendered %v, want the two hooks", ids(objs))
	}
}

func TestRenderErrorsNameTheFile(t *testing.T) {
	cases := []struct {
		name    string
		files   map[string]string
		dir     string
		file    string // result.RenderError.File
		message string // substring of the error
	}{
		{"broken YAML", map[string]string{"app/ok.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n", "app/broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [oops\n"},
			"app", "app/broken.yaml", "document 1"},
		{"an object without a name", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\ndata: {a: b}\n"},
			".", "cm.yaml", "ConfigMap has no metadata.name"},
		{"an object with only generateName", map[string]string{"job.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: migrate-}\n"},
			".", "job.yaml", "Job has only metadata.generateName \"migrate-\""},
		{"a list item with only generateName", map[string]string{"list.yaml": "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {generateName: p-}}\n"},
			".", "list.yaml", "list item 1: Pod has only metadata.generateName"},
		{"a missing directory", map[string]string{"a.yaml": ""},
			"apps/web", "apps/web", "no such directory"},
		{"the same object twice", map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n", "b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"},
			".", ".", "ConfigMap a is declared twice"},
		{"two hooks with the same generateName", map[string]string{"a.yaml": hookWithGenerateName("migrate-"), "b.yaml": hookWithGenerateName("migrate-")},
			".", ".", "Job migrate-* is declared twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, tc.files, tc.dir)
			var re *result.RenderError
			if !errors.As(err, &re) {
				t.Fatalf("Dir() error = %v, want a *result.RenderError", err)
			}
			if re.File != tc.file || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("Dir() error = %q (file %q), want file %q and a message containing %q", err, re.File, tc.file, tc.message)
			}
		})
	}
}

func TestRenderRejectsHostileYAML(t *testing.T) {
	t.Run("an alias bomb fails fast", func(t *testing.T) {
		bomb := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\na: &a [x,x,x,x,x,x,x,x,x,x]\n"
		prev := "a"
		for _, name := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
			bomb += name + ": &" + name + " [" + strings.Repeat("*"+prev+",", 9) + "*" + prev + "]\n"
			prev = name
		}
		_, err := render(t, map[string]string{"bomb.yaml": bomb}, ".")
		if !result.IsRenderError(err) || !strings.Contains(err.Error(), "too large") {
			t.Fatalf("Dir() error = %v, want a render error about size", err)
		}
	})
	t.Run("deep nesting fails fast", func(t *testing.T) {
		deep := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\ndata: " + strings.Repeat("[", 500) + strings.Repeat("]", 500) + "\n"
		_, err := render(t, map[string]string{"deep.yaml": deep}, ".")
		if !result.IsRenderError(err) {
			t.Fatalf("Dir() error = %v, want a render error", err)
		}
	})
	t.Run("more rendered bytes than the limit", func(t *testing.T) {
		doc := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: wide}\ndata: {k: " + strings.Repeat("y", 200) + "}\n"
		var b strings.Builder
		for i := 0; i < 20; i++ {
			b.WriteString("---\n" + strings.Replace(doc, "name: wide", "name: wide"+strings.Repeat("i", i), 1))
		}
		_, err := Dir(memFS(t, map[string]string{"wide.yaml": b.String()}), "/", "/", DirOptions{MaxBytes: 4096})
		var re *result.RenderError
		if !errors.As(err, &re) || re.File != "wide.yaml" || !strings.Contains(err.Error(), "limit of 4096 bytes") {
			t.Fatalf("Dir() error = %v, want the byte limit naming wide.yaml", err)
		}
	})
	t.Run("a panic while rendering becomes an error naming the directory", func(t *testing.T) {
		fs := panickingFS{memFS(t, map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"})}
		_, err := Dir(fs, "/", "/app", DirOptions{})
		var re *result.RenderError
		if !errors.As(err, &re) || re.File != "app" || !strings.Contains(err.Error(), "panicked") {
			t.Fatalf("Dir() error = %v, want a render error about a panic naming app", err)
		}
	})
	t.Run("more objects than the limit", func(t *testing.T) {
		var b strings.Builder
		for i := 0; i < 101; i++ {
			b.WriteString("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c" + strings.Repeat("x", i) + "}\n")
		}
		_, err := render(t, map[string]string{"many.yaml": b.String()}, ".")
		if !result.IsRenderError(err) || !strings.Contains(err.Error(), "over the limit of 100") {
			t.Fatalf("Dir() error = %v, want the object limit", err)
		}
	})
}

// panickingFS panics when a file is read, as a bug deep in a parser might.
type panickingFS struct{ filesys.FileSystem }

func (panickingFS) ReadFile(string) ([]byte, error) { panic("boom") }

func TestRenderKustomize(t *testing.T) {
	base := map[string]string{
		"base/kustomization.yaml": "resources: [deploy.yaml]\n",
		"base/deploy.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {level: info}\n",
	}
	t.Run("builds an overlay on a base in the repository", func(t *testing.T) {
		files := map[string]string{
			"overlays/prod/kustomization.yaml": "namespace: prod\nnamePrefix: prod-\nresources: [../../base]\nconfigMapGenerator:\n- name: extra\n  literals: [a=b]\n",
		}
		for k, v := range base {
			files[k] = v
		}
		objs, err := render(t, files, "overlays/prod")
		if err != nil {
			t.Fatal(err)
		}
		got := ids(objs)
		if len(got) != 2 || got[0] != "ConfigMap/prod/prod-settings" || !strings.HasPrefix(got[1], "ConfigMap/prod/prod-extra-") {
			t.Errorf("rendered %v, want prod-settings and a hashed prod-extra in namespace prod", got)
		}
	})
	refused := []struct{ name, resource, message string }{
		{"a remote base over https", "https://github.com/org/repo//base?ref=v1", "remote bases are disabled"},
		{"a remote base in ssh form", "git@github.com:org/repo.git", "remote bases are disabled"},
		{"a github.com path (kustomize would clone it)", "github.com/org/repo/base", "remote bases are disabled"},
		{"a base that does not exist", "missing/base", "not found in the repository"},
	}
	for _, tc := range refused {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			_, err := render(t, map[string]string{"app/kustomization.yaml": "resources: [\"" + tc.resource + "\"]\n"}, "app")
			var re *result.RenderError
			if !errors.As(err, &re) || re.File != "app/kustomization.yaml" || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("Dir() error = %v, want one naming app/kustomization.yaml with %q", err, tc.message)
			}
		})
	}
	t.Run("a kustomize error names the directory", func(t *testing.T) {
		_, err := render(t, map[string]string{"app/kustomization.yaml": "resources: [cm.yaml]\n", "app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [bad\n"}, "app")
		var re *result.RenderError
		if !errors.As(err, &re) || re.File != "app" || !strings.Contains(err.Error(), "kustomize build") {
			t.Fatalf("Dir() error = %v, want a kustomize build error naming app", err)
		}
	})
}

func FuzzDecodeManifests(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nitems: []\n"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"a":"Yg=="}}`))
	f.Add([]byte("a: &a [1,2]\nb: [*a,*a]\n<<: {apiVersion: v1}\n"))
	f.Add([]byte("x: &x {kind: Pod}\ny: &y {metadata: {name: p}}\n<<: [*x, *y, {apiVersion: v1}]\nspec: {hostNetwork: yes, n: 0755}\n---\n--- # c\nvalues: 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := DecodeManifests(data)
		if err != nil {
			return
		}
		for _, o := range objs {
			if o.GetAPIVersion() == "" || o.GetKind() == "" {
				t.Fatalf("decoded an object without apiVersion or kind: %v", o.Object)
			}
		}
	})
}
