package source_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
)

// treeBombAllocBound is the most a render of the tree bomb may allocate in all:
// main allocated 265 MiB listing the million paths the bomb names.
const treeBombAllocBound = 32 << 20

// TestATreeBombFailsFastNamingTheBound commits a tree of 1,000 files, named
// 1,000 times by one tree under bomb/: seven objects, a few KiB, that name a
// million files. Rendering any path that reaches it fails with
// RenderLimitExceeded after reading at most MaxTreeEntries entries; a path beside
// it renders and never reads it.
func TestATreeBombFailsFastNamingTheBound(t *testing.T) {
	repo := gitserver.NewLocalRepo(t, "tree-bomb")
	head := commitTreeBomb(t, repo.Dir())
	src := newSource(t, source.Options{}) // the defaults, as the agent ships them
	rev := fetch(t, src, source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Commit: head}})
	bound := fmt.Sprintf("more than %d tree entries", source.DefaultMaxTreeEntries)

	for _, tc := range []struct{ step, dir string }{
		{"the bomb's own directory fails", "bomb"},
		{"the repository's root fails", "."},
		{"a kustomization whose resources name the bomb fails", "kustomized"},
	} {
		t.Run(tc.step, func(t *testing.T) {
			var err error
			allocated, took := allocatedBy(func() { _, err = src.Render(t.Context(), rev, tc.dir, source.Helm{}) })
			t.Logf("render %s: %v, allocated %d KiB in %v", tc.dir, err, allocated>>10, took)
			var re *source.RenderError
			if !errors.As(err, &re) || re.Reason != v1alpha1.ReasonRenderLimitExceeded {
				t.Fatalf("Render %s: error %v; want a *source.RenderError with reason %s", tc.dir, err, v1alpha1.ReasonRenderLimitExceeded)
			}
			if !strings.HasPrefix(re.File, "bomb") || !strings.Contains(err.Error(), bound) {
				t.Errorf("error %q names %q; want it to name a directory of bomb/ and say %q", err, re.File, bound)
			}
			if allocated > treeBombAllocBound {
				t.Errorf("the render allocated %d MiB; want at most %d MiB", allocated>>20, treeBombAllocBound>>20)
			}
		})
	}

	t.Run("a path beside the bomb renders, reading none of it", func(t *testing.T) {
		var got []string
		allocated, _ := allocatedBy(func() { got = rendered(t, src, rev, "app") })
		if want := []string{"ConfigMap/web greeting=hello"}; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("objects at app = %v; want %v", got, want)
		}
		if allocated > 4<<20 {
			t.Errorf("rendering app allocated %d KiB; want a few hundred", allocated>>10)
		}
	})

	t.Run("the bound is the agent's to choose", func(t *testing.T) {
		small := newSource(t, source.Options{MaxTreeEntries: 4})
		rev := fetch(t, small, source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Commit: head}})
		if _, err := small.Render(t.Context(), rev, "app", source.Helm{}); err != nil {
			t.Errorf("Render app with 4 entries allowed (the root's three, and app's one): %v", err)
		}
		_, err := small.Render(t.Context(), rev, "kustomized", source.Helm{})
		if !strings.Contains(fmt.Sprint(err), "more than 4 tree entries") {
			t.Errorf("Render kustomized with 4 entries allowed: %v; want it over the bound", err)
		}
	})
}

// allocatedBy returns the bytes f allocated on the heap and how long it took.
func allocatedBy(f func()) (int64, time.Duration) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	f()
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc), took
}

// commitTreeBomb writes, with go-git's object storage, a commit on main of the
// bare repository at dir whose root holds app/cm.yaml, kustomized/ (a
// kustomization naming ../bomb) and bomb/: 1,000 directories that are all one
// tree of 1,000 files.
func commitTreeBomb(t *testing.T, dir string) string {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := repo.Storer
	blob := func(content string) plumbing.Hash {
		obj := s.NewEncodedObject()
		obj.SetType(plumbing.BlobObject)
		w, err := obj.Writer()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return store(t, s, obj)
	}
	tree := func(entries ...object.TreeEntry) plumbing.Hash {
		obj := s.NewEncodedObject()
		if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
			t.Fatal(err)
		}
		return store(t, s, obj)
	}
	file := blob("# one of a million\n")
	var files, dirs []object.TreeEntry
	for i := range 1000 {
		files = append(files, object.TreeEntry{Name: fmt.Sprintf("f%03d.yaml", i), Mode: filemode.Regular, Hash: file})
	}
	thousand := tree(files...)
	for i := range 1000 {
		dirs = append(dirs, object.TreeEntry{Name: fmt.Sprintf("d%03d", i), Mode: filemode.Dir, Hash: thousand})
	}
	app := tree(object.TreeEntry{Name: "cm.yaml", Mode: filemode.Regular, Hash: blob(configMap("web", "hello"))})
	kustomized := tree(object.TreeEntry{Name: "kustomization.yaml", Mode: filemode.Regular, Hash: blob("resources: [../bomb]\n")})
	root := tree(
		object.TreeEntry{Name: "app", Mode: filemode.Dir, Hash: app},
		object.TreeEntry{Name: "bomb", Mode: filemode.Dir, Hash: tree(dirs...)},
		object.TreeEntry{Name: "kustomized", Mode: filemode.Dir, Hash: kustomized},
	)
	sig := object.Signature{Name: "tester", Email: "tester@example.com", When: time.Unix(1_700_000_000, 0)}
	commit := s.NewEncodedObject()
	if err := (&object.Commit{Author: sig, Committer: sig, Message: "a million paths\n", TreeHash: root}).Encode(commit); err != nil {
		t.Fatal(err)
	}
	head := store(t, s, commit)
	if err := s.SetReference(plumbing.NewHashReference("refs/heads/main", head)); err != nil {
		t.Fatal(err)
	}
	return head.String()
}

func store(t *testing.T, s storer.EncodedObjectStorer, obj plumbing.EncodedObject) plumbing.Hash {
	t.Helper()
	h, err := s.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestAFlatEightMiBFileIsRefusedBeforeItIsParsed renders 8 MiB files of the
// shapes that cost yaml.v3 the most for their size at the default bounds: each
// fails naming the file and the bound, and allocates a few MiB, not the 400 MiB
// to 1 GiB that parsing them first took on main.
func TestAFlatEightMiBFileIsRefusedBeforeItIsParsed(t *testing.T) {
	head := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: flat}\n"
	const size = 8<<20 - 4096
	for _, tc := range []struct{ shape, text, unit string }{
		{"a flow list of one-character values", head + "values: [", "1,"},
		{"a list of one-character values", head + "values:\n", "- 1\n"},
		{"a list of empty values", head + "values:\n", "-\n"},
		{"aliases of a 10,000-item list", head + "a: &a [" + strings.Repeat("1,", 10_000) + "1]\nb:\n", "- *a\n"},
	} {
		t.Run(tc.shape, func(t *testing.T) {
			fs := filesys.MakeFsInMemory()
			data := tc.text + strings.Repeat(tc.unit, (size-len(tc.text))/len(tc.unit))
			if strings.HasSuffix(tc.text, "[") {
				data += "1]\n"
			}
			if err := fs.WriteFile("/repo/app/flat.yaml", []byte(data)); err != nil {
				t.Fatal(err)
			}
			var err error
			allocated, took := allocatedBy(func() { _, err = source.Render(fs, "/repo", "/repo/app", source.RenderOptions{}) })
			t.Logf("%s: %v; allocated %d MiB in %v", tc.shape, err, allocated>>20, took)
			var re *source.RenderError
			if !errors.As(err, &re) || re.File != "app/flat.yaml" || !strings.Contains(err.Error(), "YAML nodes") {
				t.Fatalf("Render = %v; want a RenderError naming app/flat.yaml and its bound in YAML nodes", err)
			}
			if allocated > 32<<20 {
				t.Errorf("the render allocated %d MiB; want at most 32 MiB", allocated>>20)
			}
		})
	}
}
