package render

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// FS replaces kyaml's in-memory file system under kustomize, so it must
// answer as kyaml's does wherever kyaml's can answer at all (names inside its
// charset).
func TestTheRenderFileSystemAnswersAsKyamlsInMemoryOne(t *testing.T) {
	files := map[string]string{
		"/app/kustomization.yaml": "resources: [a.yaml]\n",
		"/app/a.yaml":             "a",
		"/app/b.yml":              "b",
		"/app/.hidden.yaml":       "h",
		"/app/sub/c.yaml":         "c",
		"/app/sub/deeper/d.yaml":  "d",
		"/app/zz/e.json":          "e",
		"/other/f.yaml":           "f",
	}
	ours, theirs := NewFS(), filesys.MakeFsInMemory()
	for name, content := range files {
		for _, fs := range []filesys.FileSystem{ours, theirs} {
			if err := fs.WriteFile(name, []byte(content)); err != nil {
				t.Fatal(err)
			}
		}
	}
	answers := func(fs filesys.FileSystem) map[string]any {
		out := map[string]any{}
		for _, p := range []string{"/app", "app", "/app/a.yaml", "/app/sub/", "/missing", "/app/a.yaml/x", "/"} {
			dir, file, err := fs.CleanedAbs(p)
			out["CleanedAbs "+p] = []any{string(dir), file, err != nil}
			out["Exists "+p] = fs.Exists(p)
			out["IsDir "+p] = fs.IsDir(p)
			data, err := fs.ReadFile(p)
			out["ReadFile "+p] = []any{string(data), err != nil}
		}
		for _, p := range []string{"/app", "/app/sub"} {
			names, err := fs.ReadDir(p)
			sorted := append([]string(nil), names...)
			slices.Sort(sorted)
			out["ReadDir "+p] = []any{sorted, err != nil}
		}
		for _, pattern := range []string{"/app/*.yaml", "/app/*", "/app/.*", "/app/sub/*/*.yaml", "/app/[ab].y*ml"} {
			matches, err := fs.Glob(pattern)
			out["Glob "+pattern] = []any{matches, err != nil}
		}
		var walked []string
		err := fs.Walk("/app", func(p string, info os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			walked = append(walked, p+" "+info.Name())
			if info.IsDir() && info.Name() == "deeper" {
				return filepath.SkipDir
			}
			if info.Name() == "b.yml" {
				return filepath.SkipDir // a file's SkipDir ends its directory
			}
			return nil
		})
		out["Walk /app"] = []any{walked, err != nil}
		return out
	}
	if diff := cmp.Diff(answers(theirs), answers(ours)); diff != "" {
		t.Errorf("answers differ (-kyaml +ours):\n%s", diff)
	}

	t.Run("and takes any name git holds", func(t *testing.T) {
		for _, name := range []string{"/app/notes copy.txt", "/app/logo@2x.png", "/app/café.md", "/base@v2/k.yaml"} {
			if err := ours.WriteFile(name, []byte("x")); err != nil {
				t.Errorf("WriteFile %q: %v", name, err)
			}
			if data, err := ours.ReadFile(name); err != nil || string(data) != "x" {
				t.Errorf("ReadFile %q = %q, %v", name, data, err)
			}
		}
	})
}
