package source_test

import (
	"bytes"
	"debug/buildinfo"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
)

// conformanceDir holds fixture directories written by the project, one per
// kustomize feature or directory layout. Each is rendered at its root.
const conformanceDir = "testdata/conformance"

// fixtures lists the fixture directories.
func fixtures(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(conformanceDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if len(names) < 15 {
		t.Fatalf("%d fixture directories in %s, want the whole suite", len(names), conformanceDir)
	}
	return names
}

func hasKustomization(dir string) bool {
	for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// Tether builds kustomizations with the kustomize library in process; users
// compare with the kustomize CLI of the same version. Every fixture with a
// kustomization renders to what `kustomize build` prints, read as kubectl reads
// it, object for object.
func TestEveryKustomizationRendersAsTheKustomizeCLIBuildsIt(t *testing.T) {
	bin := kustomizeCLI(t)
	built := 0
	for _, name := range fixtures(t) {
		dir := filepath.Join(conformanceDir, name)
		if !hasKustomization(dir) {
			continue
		}
		built++
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(bin, "build", dir)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("kustomize build %s: %v\n%s", dir, err, stderr.String())
			}
			want, err := source.DecodeManifests(stdout.Bytes())
			if err != nil {
				t.Fatalf("reading kustomize's output as kubectl does: %v\n%s", err, stdout.String())
			}
			got, err := source.RenderDirectory(t.Context(), dir, source.Helm{}, source.DefaultOptions())
			if err != nil {
				t.Fatalf("RenderDirectory %s: %v", dir, err)
			}
			// kustomize build orders its output by kind ("legacy" order); the
			// library as Tether calls it keeps the kustomization's order, and
			// Tether's apply orders objects itself.
			if diff := cmp.Diff(fieldsOf(sortedByID(want)), fieldsOf(sortedByID(got))); diff != "" {
				t.Errorf("Tether's render of %s differs from kustomize build (-kustomize +tether):\n%s", name, diff)
			}
		})
	}
	if built == 0 {
		t.Fatal("no fixture has a kustomization")
	}
}

// The agent renders a commit; `tether render` and `tether diff` render a
// directory on disk. Both go through one copier and one renderer, and every
// fixture, committed and fetched, renders to the same objects both ways.
func TestTheAgentAndTheCLIRenderEveryFixtureAlike(t *testing.T) {
	repo := gitserver.NewLocalRepo(t, "conformance")
	head := pushTree(t, repo, readFiles(t, conformanceDir), nil)
	src := newSource(t, source.Options{})
	rev := fetch(t, src, source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Commit: head}})
	for _, name := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			snap, err := src.Render(t.Context(), rev, name, source.Helm{})
			if err != nil {
				t.Fatalf("the agent's render of %s: %v", name, err)
			}
			cli, err := source.RenderDirectory(t.Context(), filepath.Join(conformanceDir, name), source.Helm{}, source.DefaultOptions())
			if err != nil {
				t.Fatalf("RenderDirectory %s: %v", name, err)
			}
			if diff := cmp.Diff(fieldsOf(snap.Objects), fieldsOf(cli)); diff != "" {
				t.Errorf("renders of %s differ (-agent +cli):\n%s", name, diff)
			}
		})
	}
}

// kustomize's CLI and library are pinned apart (test/tools/k8s/go.mod's
// sigs.k8s.io/kustomize/kustomize/v5, go.mod's sigs.k8s.io/kustomize/api): the conformance test
// means something only while the CLI is built from the library Tether links.
func TestTheKustomizeCLIIsBuiltFromTheLibraryTetherLinks(t *testing.T) {
	bin := kustomizeCLI(t)
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatalf("reading the build information of %s: %v", bin, err)
	}
	linked := map[string]string{}
	for _, d := range info.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		linked[d.Path] = d.Version
	}
	goMod := readGoMod(t)
	for _, mod := range []string{"sigs.k8s.io/kustomize/api", "sigs.k8s.io/kustomize/kyaml"} {
		want := requiredVersion(t, goMod, mod)
		if linked[mod] != want {
			t.Errorf("%s (kustomize %s) links %s %s; go.mod requires %s: pin in test/tools/k8s/go.mod the kustomize release built on %s %s",
				bin, info.Main.Version, mod, linked[mod], want, mod, want)
		}
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	if got := strings.TrimSpace(string(out)); got != info.Main.Version {
		t.Errorf("%s version = %q, want %q, the module it was built from", bin, got, info.Main.Version)
	}
}

// kustomizeCLI returns the pinned kustomize CLI: $TETHER_KUSTOMIZE (which the
// Makefile sets, having built it), else the one in the module's .tools/testbin.
func kustomizeCLI(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("TETHER_KUSTOMIZE")
	if bin == "" {
		bin = filepath.Join(moduleRoot(t), ".tools", "testbin", "kustomize")
	}
	if _, err := os.Stat(bin); bin == "" || err != nil {
		if testing.Short() {
			t.Skip("the pinned kustomize CLI is not built; `make kustomize` builds it")
		}
		t.Fatalf("the pinned kustomize CLI %q is missing: run `make kustomize` (make test builds it)", bin)
	}
	return bin
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for ; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if dir == filepath.Dir(dir) {
			t.Fatal("no go.mod above the test's directory")
		}
	}
}

func readGoMod(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(moduleRoot(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// requiredVersion reads the version of mod that go.mod requires.
func requiredVersion(t *testing.T, goMod, mod string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(mod) + `\s+(v\S+)`).FindStringSubmatch(goMod)
	if m == nil {
		t.Fatalf("go.mod requires no %s", mod)
	}
	return m[1]
}

// readFiles reads every file below dir, by its path relative to dir.
func readFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// sortedByID sorts objects by group, kind, namespace and name.
func sortedByID(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	id := func(o *unstructured.Unstructured) string {
		gvk := o.GroupVersionKind()
		return gvk.Group + "/" + gvk.Kind + "/" + o.GetNamespace() + "/" + o.GetName()
	}
	out := slices.Clone(objs)
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int { return strings.Compare(id(a), id(b)) })
	return out
}

// fieldsOf lists objects as their fields, for go-cmp to tell apart field by field.
func fieldsOf(objs []*unstructured.Unstructured) []map[string]any {
	out := make([]map[string]any, len(objs))
	for i, o := range objs {
		out[i] = o.Object
	}
	return out
}
