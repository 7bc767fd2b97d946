package source

import (
	"container/list"
	gosync "sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// renderCache keeps rendered objects by key, least recently used first out, within
// a budget of bytes (what the decoded objects take in memory, heldSize). A
// result larger than the whole budget is not kept. It keeps the failures that a render of the same key would
// meet again too (see lasting), each counted at the size of its message: a
// Sync stalled on a commit that does not render asks again at every interval,
// and must not cost a render each time.
type renderCache struct {
	mu       gosync.Mutex
	maxBytes int64
	bytes    int64
	order    *list.List // of *renderEntry, most recently used first
	entries  map[string]*list.Element
}

type renderEntry struct {
	key string
	rendered
	err  error
	size int64
}

// rendered is what one render made: the objects.
type rendered struct {
	objs []*unstructured.Unstructured
}

func newRenderCache(maxBytes int64) *renderCache {
	return &renderCache{maxBytes: maxBytes, order: list.New(), entries: map[string]*list.Element{}}
}

// get returns key's render, and whether the cache holds it.
func (c *renderCache) get(key string) (rendered, bool) {
	e, ok := c.lookup(key)
	if !ok || e.err != nil {
		return rendered{}, false
	}
	return e.rendered, true
}

// failure returns the lasting failure of key's render, if the cache holds one.
func (c *renderCache) failure(key string) error {
	e, ok := c.lookup(key)
	if !ok {
		return nil
	}
	return e.err
}

func (c *renderCache) lookup(key string) (*renderEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*renderEntry), true
}

func (c *renderCache) put(key string, r rendered) {
	c.add(&renderEntry{key: key, rendered: r, size: heldSize(r.objs)})
}

// putError keeps err, the failure of key's render that every render of it would
// meet again.
func (c *renderCache) putError(key string, err error) {
	c.add(&renderEntry{key: key, err: err, size: int64(len(key) + len(err.Error()))})
}

func (c *renderCache) add(e *renderEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[e.key]; ok || e.size > c.maxBytes {
		return
	}
	size := e.size
	c.entries[e.key] = c.order.PushFront(e)
	c.bytes += size
	for c.bytes > c.maxBytes {
		c.remove(c.order.Back())
	}
}

// forget drops every result whose key starts with prefix.
func (c *renderCache) forget(prefix string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, el := range c.entries {
		if len(key) >= len(prefix) && key[:len(prefix)] == prefix {
			c.remove(el)
		}
	}
}

// forgetIf drops every result whose key drop says to.
func (c *renderCache) forgetIf(drop func(key string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, el := range c.entries {
		if drop(key) {
			c.remove(el)
		}
	}
}

func (c *renderCache) remove(el *list.Element) {
	e := el.Value.(*renderEntry)
	c.order.Remove(el)
	delete(c.entries, e.key)
	c.bytes -= e.size
}

// size reports how many results and bytes the cache holds.
func (c *renderCache) size() (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.bytes
}
