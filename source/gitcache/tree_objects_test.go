package gitcache

import (
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/gitserver"
)

// TestARenderLeavesNoDecodedObjectsInTheRepositorysCache reads two paths of
// one commit as a render reads them (Tree) and looks into the repository's
// cache of decoded git objects after each: it holds none of the blobs, trees or
// the commit the reading decoded (they were copied into the render's files),
// and a reading after the cache was emptied reads the same commit from the
// pack again, right.
func TestARenderLeavesNoDecodedObjectsInTheRepositorysCache(t *testing.T) {
	repo := gitserver.NewLocalRepo(t, "forget-objects")
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  k: " + strings.Repeat("v", 512) + "\n"
	}
	head := repo.Commit(t, map[string]string{
		"a/one.yaml": cm("one"), "a/two.yaml": cm("two"), "b/three.yaml": cm("three"),
	}, "two paths")
	s := newTestCache(t, Options{})
	rev, err := s.Fetch(t.Context(), Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Commit: head}})
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	files := map[string]string{"a/one.yaml": cm("one"), "a/two.yaml": cm("two"), "b/three.yaml": cm("three")}
	for _, tc := range []struct {
		dir   string
		files []string
	}{
		{"a", []string{"a/one.yaml", "a/two.yaml"}},
		{"b", []string{"b/three.yaml"}},
	} {
		fs, err := s.Tree(rev, tc.dir)
		if err != nil {
			t.Fatalf("Tree %s: %v", tc.dir, err)
		}
		for _, f := range tc.files {
			data, err := fs.ReadFile("/" + f)
			if err != nil || string(data) != files[f] {
				t.Errorf("reading %s for %s = %q, %v; want %q", f, tc.dir, data, err, files[f])
			}
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
