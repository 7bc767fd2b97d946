package gitcache

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"

	"tether.dev/tether/api/v1alpha1"
)

// countingStorage counts the reads of each object.
type countingStorage struct {
	*memory.Storage
	reads map[plumbing.Hash]int
}

func (s *countingStorage) EncodedObject(t plumbing.ObjectType, id plumbing.Hash) (plumbing.EncodedObject, error) {
	s.reads[id]++
	return s.Storage.EncodedObject(t, id)
}

// store writes obj and returns its id.
func store(t *testing.T, s *countingStorage, obj interface {
	Encode(plumbing.EncodedObject) error
}) plumbing.Hash {
	t.Helper()
	enc := s.NewEncodedObject()
	if err := obj.Encode(enc); err != nil {
		t.Fatal(err)
	}
	id, err := s.SetEncodedObject(enc)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// monorepo makes a repository whose root holds dirs directories of one
// ConfigMap each, and returns it with its root tree's id.
func monorepo(t *testing.T, dirs int) (*git.Repository, *countingStorage, plumbing.Hash) {
	t.Helper()
	s := &countingStorage{Storage: memory.NewStorage(), reads: map[plumbing.Hash]int{}}
	blobID, err := s.SetEncodedObject(blobOf(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"))
	if err != nil {
		t.Fatal(err)
	}
	dir := store(t, s, &object.Tree{Entries: []object.TreeEntry{{Name: "cm.yaml", Mode: filemode.Regular, Hash: blobID}}})
	root := &object.Tree{}
	for i := range dirs {
		root.Entries = append(root.Entries, object.TreeEntry{Name: fmt.Sprintf("team-%04d", i), Mode: filemode.Dir, Hash: dir})
	}
	rootID := store(t, s, root)
	repo, err := git.Init(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return repo, s, rootID
}

// TestRendersOfOneCommitParseItsRootOnce copies the directories of a thousand
// teams from one commit, one copier each as a fleet's renders do: through the
// repository's treeCache the root tree is read once, where each copier read it
// before; and a tree found in the cache still counts against the bound on
// entries of the copier that asks for it.
func TestRendersOfOneCommitParseItsRootOnce(t *testing.T) {
	const teams = 1000
	repo, s, root := monorepo(t, teams)
	opts := DefaultOptions().TreeBounds
	trees := newTreeCache()
	for i := range teams {
		c := newTreeCopier(gitStore{repo: repo, trees: trees}, root, opts)
		dir := fmt.Sprintf("team-%04d", i)
		if err := c.copyFor(dir); err != nil {
			t.Fatalf("copying %s: %v", dir, err)
		}
		if _, err := c.fs.ReadFile("/" + dir + "/cm.yaml"); err != nil {
			t.Fatalf("%s/cm.yaml not copied: %v", dir, err)
		}
	}
	if got := s.reads[root]; got != 1 {
		t.Errorf("the root tree was read %d times for %d renders; want once", got, teams)
	}

	// Without the cache, as before: one read of the root a render.
	c := newTreeCopier(gitStore{repo: repo}, root, opts)
	before := s.reads[root]
	if err := c.copyFor("team-0001"); err != nil {
		t.Fatal(err)
	}
	if got := s.reads[root] - before; got != 1 {
		t.Errorf("a render without the cache read the root %d times; want 1", got)
	}

	small := opts
	small.MaxTreeEntries = teams - 1
	err := newTreeCopier(gitStore{repo: repo, trees: trees}, root, small).copyFor("team-0001")
	var re *RenderError
	if !errors.As(err, &re) || re.Reason != v1alpha1.ReasonRenderLimitExceeded || re.File != "." {
		t.Errorf("a render allowed %d entries, its root (%d) cached: %v; want a RenderError naming the root", teams-1, teams, err)
	}
}

// TestTheTreeCacheKeepsTheTreesInUseWithinItsBound fills the cache with far more
// trees than its bound holds while one tree is asked for all along.
func TestTheTreeCacheKeepsTheTreesInUseWithinItsBound(t *testing.T) {
	c := newTreeCache()
	hot := plumbing.NewHash("1111111111111111111111111111111111111111")
	c.put(hot, []treeEntry{{name: "apps", kind: entryTree}})
	entries := make([]treeEntry, 100)
	for i := range entries {
		entries[i].name = fmt.Sprintf("file-%03d.yaml", i)
	}
	puts := 4 * treeCacheBytes / treeBytes(entries)
	for i := range puts {
		var id plumbing.Hash
		copy(id[:], fmt.Sprintf("%020d", i))
		c.put(id, entries)
		if _, ok := c.get(hot); !ok {
			t.Fatalf("the tree in use was dropped after %d others were put", i+1)
		}
		held := c.bytes
		for _, e := range c.older {
			held += treeBytes(e)
		}
		if held > 2*treeCacheBytes {
			t.Fatalf("after %d puts the cache holds %d bytes; want at most %d", i+1, held, 2*treeCacheBytes)
		}
	}
	huge := make([]treeEntry, treeCacheBytes/int(treeBytes([]treeEntry{{}}))+1)
	c.put(plumbing.NewHash("2222222222222222222222222222222222222222"), huge)
	if _, ok := c.get(plumbing.NewHash("2222222222222222222222222222222222222222")); ok {
		t.Error("a tree larger than a generation was kept")
	}
}

func blobOf(t *testing.T, content string) plumbing.EncodedObject {
	t.Helper()
	obj := &plumbing.MemoryObject{}
	obj.SetType(plumbing.BlobObject)
	if _, err := obj.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	return obj
}
