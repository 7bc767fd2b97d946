package git

import (
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

func blobOf(t *testing.T, content string) plumbing.EncodedObject {
	t.Helper()
	obj := &plumbing.MemoryObject{}
	obj.SetType(plumbing.BlobObject)
	if _, err := obj.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestTheObjectCacheDropsTheLeastRecentlyUsedAndKeepsWorkingWhenCleared fills a
// cache of 100 bytes with objects of 40, reads one back, and clears it.
func TestTheObjectCacheDropsTheLeastRecentlyUsedAndKeepsWorkingWhenCleared(t *testing.T) {
	c := NewObjectLRU(100)
	var objs []plumbing.EncodedObject
	for i := range 3 {
		objs = append(objs, blobOf(t, fmt.Sprintf("%040d", i)))
	}
	c.Put(objs[0])
	c.Put(objs[1])
	if _, ok := c.Get(objs[0].Hash()); !ok {
		t.Fatal("the first object is gone with 80 of 100 bytes used")
	}
	c.Put(objs[2]) // 120 bytes: the least recently used, objs[1], goes
	if _, ok := c.Get(objs[1].Hash()); ok {
		t.Error("the least recently used object was kept past the bound")
	}
	for _, o := range []plumbing.EncodedObject{objs[0], objs[2]} {
		if got, ok := c.Get(o.Hash()); !ok || got != o {
			t.Errorf("object %s: %v, %v; want it kept", o.Hash(), got, ok)
		}
	}
	if c.size != 80 {
		t.Errorf("size %d; want 80", c.size)
	}
	c.Put(blobOf(t, fmt.Sprintf("%0101d", 0)))
	if c.size != 80 || c.ll.Len() != 2 {
		t.Errorf("an object over the bound changed the cache: size %d, %d objects", c.size, c.ll.Len())
	}

	c.Clear()
	if _, ok := c.Get(objs[0].Hash()); ok || c.size != 0 || c.ll.Len() != 0 || len(c.byHash) != 0 {
		t.Fatalf("after Clear: size %d, %d objects listed, %d mapped", c.size, c.ll.Len(), len(c.byHash))
	}
	c.Put(objs[1])
	if got, ok := c.Get(objs[1].Hash()); !ok || got != objs[1] {
		t.Error("an object put after Clear is not found")
	}
}
