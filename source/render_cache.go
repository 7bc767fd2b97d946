package source

import (
	"container/list"
	gosync "sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// renderCache keeps rendered objects by key, least recently used first out, within
// a budget of bytes (the objects' size as JSON). A result larger than the whole
// budget is not kept.
type renderCache struct {
	mu       gosync.Mutex
	maxBytes int64
	bytes    int64
	order    *list.List // of *renderEntry, most recently used first
	entries  map[string]*list.Element
}

type renderEntry struct {
	key  string
	objs []*unstructured.Unstructured
	size int64
}

func newRenderCache(maxBytes int64) *renderCache {
	return &renderCache{maxBytes: maxBytes, order: list.New(), entries: map[string]*list.Element{}}
}

func (c *renderCache) get(key string) ([]*unstructured.Unstructured, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*renderEntry).objs, true
}

func (c *renderCache) put(key string, objs []*unstructured.Unstructured, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; ok || size > c.maxBytes {
		return
	}
	c.entries[key] = c.order.PushFront(&renderEntry{key: key, objs: objs, size: size})
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
