package source

import (
	"fmt"
	"testing"

	"tether.dev/tether/source/wall"
	"tether.dev/tether/test/gitserver"
)

// TestOneNamespacesRendersCannotPushAnothersOutOfTheRenderCache: namespace a's
// Syncs render ten paths of a repository, more than the render cache holds;
// namespace b's one render, the least recently used of all, stays cached (b's
// Sync does not render again at its next reconcile), and a's oldest go.
func TestOneNamespacesRendersCannotPushAnothersOutOfTheRenderCache(t *testing.T) {
	files := map[string]string{}
	var paths []string
	for i := range 10 {
		paths = append(paths, fmt.Sprintf("a%d", i))
	}
	for _, p := range append([]string{"b0"}, paths...) {
		files[p+"/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {k: v}\n"
	}
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "monorepo")
	repo.Commit(t, files, "one")
	s := newCacheTestSource(t, Options{})
	rev := mustFetch(t, s, repo.URL())
	render := func(tenant, path string) {
		t.Helper()
		if _, err := s.Render(WithTenant(t.Context(), tenant), rev, path, Helm{}); err != nil {
			t.Fatalf("namespace %s rendering %s: %v", tenant, path, err)
		}
	}
	render("b", "b0")
	_, one := s.renders.Size()
	s.renders = wall.NewCache(4*one + one/2) // four renders of this size
	render("b", "b0")

	for _, p := range paths {
		render("a", p)
	}
	if _, ok := s.renders.Get(renderKey(rev, "b0", nil)); !ok {
		t.Error("namespace b's render was pushed out of the cache by namespace a's")
	}
	for i, p := range paths {
		_, ok := s.renders.Get(renderKey(rev, p, nil))
		if want := i >= len(paths)-3; ok != want {
			t.Errorf("a's render of %s cached: %t, want %t (a keeps its three most recent)", p, ok, want)
		}
	}
	if n, bytes := s.renders.Size(); bytes > 4*one+one/2 {
		t.Errorf("the render cache holds %d renders, %d bytes, over its budget of %d", n, bytes, 4*one+one/2)
	}
}
