package git

import (
	"container/list"
	gosync "sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
)

// ObjectLRU is an open repository's cache of decoded objects (go-git's
// cache.Object): the least recently used go first once their sizes pass max, as
// in go-git's cache.ObjectLRU. Unlike that one, Clear keeps the map and the list
// it empties: a render clears the cache when it is done (forgetObjects), and
// go-git's made a map for a thousand objects anew at the next render's first
// object, about 50 KB a render (a seventh of what a fleet's render of a small
// path allocated).
type ObjectLRU struct {
	mu     gosync.Mutex
	max    int64
	size   int64
	ll     list.List
	byHash map[plumbing.Hash]*list.Element
}

var _ cache.Object = (*ObjectLRU)(nil)

func NewObjectLRU(max cache.FileSize) *ObjectLRU {
	return &ObjectLRU{max: int64(max), byHash: map[plumbing.Hash]*list.Element{}}
}

func (c *ObjectLRU) Put(obj plumbing.EncodedObject) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := obj.Hash()
	if e, ok := c.byHash[id]; ok {
		c.size += obj.Size() - e.Value.(plumbing.EncodedObject).Size()
		e.Value = obj
		c.ll.MoveToFront(e)
	} else {
		if obj.Size() > c.max {
			return
		}
		c.byHash[id] = c.ll.PushFront(obj)
		c.size += obj.Size()
	}
	for c.size > c.max {
		last := c.ll.Back()
		if last == nil {
			c.size = 0
			break
		}
		old := c.ll.Remove(last).(plumbing.EncodedObject)
		delete(c.byHash, old.Hash())
		c.size -= old.Size()
	}
}

func (c *ObjectLRU) Get(id plumbing.Hash) (plumbing.EncodedObject, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byHash[id]
	if !ok {
		return nil, false
	}
	c.ll.MoveToFront(e)
	return e.Value.(plumbing.EncodedObject), true
}

func (c *ObjectLRU) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.byHash)
	c.ll.Init()
	c.size = 0
}
