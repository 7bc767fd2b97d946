package gitcache

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// encodedTree is a tree object's content as git writes it.
func encodedTree(t testing.TB, entries ...object.TreeEntry) []byte {
	t.Helper()
	obj := &plumbing.MemoryObject{}
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		t.Fatal(err)
	}
	r, err := obj.Reader()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadTreeEntriesStopsAtTheLimit(t *testing.T) {
	id := plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")
	data := encodedTree(t,
		object.TreeEntry{Name: "a.yaml", Mode: filemode.Regular, Hash: id},
		object.TreeEntry{Name: "b", Mode: filemode.Dir, Hash: id},
		object.TreeEntry{Name: "c", Mode: filemode.Symlink, Hash: id},
		object.TreeEntry{Name: "d", Mode: filemode.Submodule, Hash: id},
	)
	got, err := readTreeEntries(bytes.NewReader(data), 4)
	if err != nil {
		t.Fatalf("readTreeEntries: %v", err)
	}
	want := []treeEntry{{"a.yaml", entryFile, id}, {"b", entryTree, id}, {"c", entrySymlink, id}, {"d", entryOther, id}}
	if len(got) != len(want) {
		t.Fatalf("readTreeEntries = %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %v; want %v", i, got[i], want[i])
		}
	}
	if _, err := readTreeEntries(bytes.NewReader(data), 3); !errors.Is(err, errTooManyEntries) {
		t.Errorf("readTreeEntries with 3 allowed: %v; want errTooManyEntries", err)
	}
	for _, bad := range []string{"..", ".", "a/b"} {
		data := []byte("100644 " + bad + "\x00" + string(id[:]))
		if _, err := readTreeEntries(bytes.NewReader(data), 10); !errors.Is(err, errMalformedTree) {
			t.Errorf("an entry named %q: %v; want errMalformedTree", bad, err)
		}
	}
}

// TestReadTreeEntriesBoundsAName reads names at the bound and past it, and
// entries cut short.
func TestReadTreeEntriesBoundsAName(t *testing.T) {
	id := plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")
	longest := strings.Repeat("n", maxEntryName)
	data := encodedTree(t,
		object.TreeEntry{Name: "a.yaml", Mode: filemode.Regular, Hash: id},
		object.TreeEntry{Name: longest, Mode: filemode.Regular, Hash: id},
	)
	got, err := readTreeEntries(bytes.NewReader(data), 2)
	if err != nil || len(got) != 2 || got[1].name != longest || got[0].name != "a.yaml" {
		t.Fatalf("a name of %d bytes: %d entries, %v; want both entries", maxEntryName, len(got), err)
	}
	over := []byte("100644 " + longest + "n\x00" + string(id[:]))
	if _, err := readTreeEntries(bytes.NewReader(over), 2); !errors.Is(err, errMalformedTree) || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a name of %d bytes: %v; want it refused as too long", maxEntryName+1, err)
	}
	for _, cut := range []int{3, 9, len(data) - 5} {
		if _, err := readTreeEntries(bytes.NewReader(data[:cut]), 2); !errors.Is(err, errMalformedTree) {
			t.Errorf("a tree cut at byte %d: %v; want errMalformedTree", cut, err)
		}
	}
}

// FuzzReadTreeEntries checks the tree parser against go-git's decoder: whatever
// it accepts, go-git reads as the same entries, and it never returns more
// entries than it was allowed.
func FuzzReadTreeEntries(f *testing.F) {
	id := plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")
	f.Add(encodedTree(f, object.TreeEntry{Name: "a.yaml", Mode: filemode.Regular, Hash: id}, object.TreeEntry{Name: "b", Mode: filemode.Dir, Hash: id}), 5)
	f.Add([]byte("100664 old\x00"+string(id[:])+"120000 link\x00"+string(id[:])), 1)
	f.Add([]byte("40000 d\x00short"), 3)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		limit = max(limit%64, 0)
		got, err := readTreeEntries(bytes.NewReader(data), limit)
		if err != nil {
			return
		}
		if len(got) > limit {
			t.Fatalf("%d entries read with %d allowed", len(got), limit)
		}
		var tree object.Tree
		obj := &plumbing.MemoryObject{}
		obj.SetType(plumbing.TreeObject)
		if _, err := obj.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := tree.Decode(obj); err != nil {
			t.Fatalf("go-git refuses a tree read as %v: %v", got, err)
		}
		if len(tree.Entries) != len(got) {
			t.Fatalf("go-git reads %d entries, the parser %d", len(tree.Entries), len(got))
		}
		for i, e := range tree.Entries {
			if e.Name != got[i].name || e.Hash != got[i].hash {
				t.Errorf("entry %d: go-git reads %q %s, the parser %q %s", i, e.Name, e.Hash, got[i].name, got[i].hash)
			}
			if (e.Mode == filemode.Dir) != (got[i].kind == entryTree) || (e.Mode == filemode.Symlink) != (got[i].kind == entrySymlink) {
				t.Errorf("entry %d: go-git reads mode %v, the parser kind %d", i, e.Mode, got[i].kind)
			}
		}
	})
}
