package source

import (
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/gitserver"
)

// TestARenderLeavesNoDecodedObjectsInTheRepositorysCache renders two paths of
// one commit and looks into the repository's cache of decoded git objects after
// each: it holds none of the blobs, trees or the commit the render read (they
// were copied, and the render is cached), and a render after the cache was
// emptied reads the same commit from the pack again, right.
func TestARenderLeavesNoDecodedObjectsInTheRepositorysCache(t *testing.T) {
	repo := gitserver.NewLocalRepo(t, "forget-objects")
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  k: " + strings.Repeat("v", 512) + "\n"
	}
	head := repo.Commit(t, map[string]string{
		"a/one.yaml": cm("one"), "a/two.yaml": cm("two"), "b/three.yaml": cm("three"),
	}, "two paths")
	s, err := New(Options{CacheDir: t.TempDir(), AllowFileURLs: true})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	rev, err := s.Fetch(t.Context(), Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Commit: head}})
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	for _, tc := range []struct {
		dir   string
		files []string
		want  []string
	}{
		{"a", []string{"a/one.yaml", "a/two.yaml"}, []string{"one", "two"}},
		{"b", []string{"b/three.yaml"}, []string{"three"}},
	} {
		snap, err := s.Render(t.Context(), rev, tc.dir, Helm{})
		if err != nil {
			t.Fatalf("Render %s: %v", tc.dir, err)
		}
		var names []string
		for _, o := range snap.Objects {
			names = append(names, o.GetName())
		}
		if strings.Join(names, ",") != strings.Join(tc.want, ",") {
			t.Errorf("Render %s = %v; want %v", tc.dir, names, tc.want)
		}
		e := s.entry(rev.URL)
		e.mu.Lock()
		objects := e.objects
		e.mu.Unlock()
		if objects == nil {
			t.Fatalf("the repository of %s has no object cache", rev.URL)
		}
		read := map[string]string{"the commit": head, "the root tree": head + "^{tree}", "the tree of " + tc.dir: head + ":" + tc.dir}
		for _, f := range tc.files {
			read["the blob of "+f] = head + ":" + f
		}
		for what, spec := range read {
			id := plumbing.NewHash(gitserver.Git(t, repo.Dir(), "rev-parse", spec))
			if _, held := objects.Get(id); held {
				t.Errorf("after rendering %s, the repository's object cache holds %s (%s)", tc.dir, what, id)
			}
		}
	}
}
