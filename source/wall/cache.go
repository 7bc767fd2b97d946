package wall

import (
	"container/list"
	"maps"
	gosync "sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Cache keeps rendered objects by key within a budget of bytes (what the
// objects take in memory as it holds them, heldSize: each as its JSON, decoded
// again on a hit, a fraction of what the decoded maps take). A result larger than the whole
// budget is not kept. It keeps the failures that a render of the same key would
// meet again too (the caller says which: source's lasting), each counted at the size of its message: a
// Sync stalled on a commit that does not render asks again at every interval,
// and must not cost a render each time.
//
// The budget is shared fairly between tenants (the namespaces whose Syncs
// asked for the renders, WithTenant): each entry counts to the tenant whose
// render made it, and over budget the least recently used entry of the tenant
// holding the most goes first. A tenant alone may fill the cache, but one that
// renders more than the others cannot push their renders out while it holds
// more than they do: each keeps about budget/N when N tenants want more, so
// one namespace's Syncs cannot make the others render again at every
// reconcile, waiting for render slots.
type Cache struct {
	mu       gosync.Mutex
	maxBytes int64
	bytes    int64
	entries  map[string]*list.Element
	// tenants holds each tenant's entries, so that the one to remove is found
	// in time proportional to the number of tenants, not of entries.
	tenants map[string]*tenantRenders
}

// tenantRenders are the entries of one tenant.
type tenantRenders struct {
	order *list.List // of *renderEntry, most recently used first
	bytes int64
}

type renderEntry struct {
	key    string
	tenant string
	objs   compactObjects
	err    error
	size   int64
}

// Rendered is what one render made: the objects.
type Rendered struct {
	objs []*unstructured.Unstructured
	// own says that objs were decoded for one caller alone (a hit of the render
	// cache), where a render's own objects are shared by every caller that waited
	// for it.
	own bool
	// held is objs as the render cache keeps them, when the render made them
	// so (a worker's answer); nil encodes objs for the cache.
	held compactObjects
}

// ForCaller returns the objects of r for one caller, their top level and
// metadata its own (ownMetadata): a copy of those maps unless r's are already.
func (r Rendered) ForCaller() []*unstructured.Unstructured {
	if r.own {
		return r.objs
	}
	return ownMetadata(r.objs)
}

// NewCache returns an empty cache of maxBytes.
func NewCache(maxBytes int64) *Cache {
	return &Cache{maxBytes: maxBytes, entries: map[string]*list.Element{}, tenants: map[string]*tenantRenders{}}
}

// Get returns key's render, decoded anew for the caller, and whether the
// cache holds it.
func (c *Cache) Get(key string) (Rendered, bool) {
	e, ok := c.lookup(key)
	if !ok || e.err != nil {
		return Rendered{}, false
	}
	objs, err := e.objs.decode()
	if err != nil { // it encoded them: not met; render again
		return Rendered{}, false
	}
	return Rendered{objs: objs, own: true}, true
}

// Failure returns the lasting failure of key's render, if the cache holds one.
func (c *Cache) Failure(key string) error {
	e, ok := c.lookup(key)
	if !ok {
		return nil
	}
	return e.err
}

func (c *Cache) lookup(key string) (*renderEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*renderEntry)
	c.tenants[e.tenant].order.MoveToFront(el)
	return e, true
}

// Put keeps r, key's render made for tenant, compactly (compact). Objects
// that do not encode (not met: they were decoded from JSON or YAML) are not
// kept, and render again.
func (c *Cache) Put(key, tenant string, r Rendered) {
	held := r.held
	if held == nil {
		var err error
		if held, err = compact(r.objs); err != nil {
			return
		}
	}
	c.add(&renderEntry{key: key, tenant: tenant, objs: held, size: heldSize(held)})
}

// PutError keeps err, the failure of key's render for tenant that every render
// of it would meet again.
func (c *Cache) PutError(key, tenant string, err error) {
	c.add(&renderEntry{key: key, tenant: tenant, err: err, size: int64(len(key) + len(err.Error()))})
}

func (c *Cache) add(e *renderEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[e.key]; ok || e.size > c.maxBytes {
		return
	}
	t, ok := c.tenants[e.tenant]
	if !ok {
		t = &tenantRenders{order: list.New()}
		c.tenants[e.tenant] = t
	}
	c.entries[e.key] = t.order.PushFront(e)
	t.bytes += e.size
	c.bytes += e.size
	for c.bytes > c.maxBytes {
		c.remove(c.victim())
	}
}

// victim is the entry to remove first: the least recently used of the tenant
// whose entries take the most (the first by name of those that take as much).
func (c *Cache) victim() *list.Element {
	var most *tenantRenders
	name := ""
	for n, t := range c.tenants {
		if most == nil || t.bytes > most.bytes || (t.bytes == most.bytes && n < name) {
			most, name = t, n
		}
	}
	return most.order.Back()
}

// Forget drops every result whose key starts with prefix.
func (c *Cache) Forget(prefix string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, el := range c.entries {
		if len(key) >= len(prefix) && key[:len(prefix)] == prefix {
			c.remove(el)
		}
	}
}

// ForgetIf drops every result whose key drop says to.
func (c *Cache) ForgetIf(drop func(key string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, el := range c.entries {
		if drop(key) {
			c.remove(el)
		}
	}
}

func (c *Cache) remove(el *list.Element) {
	e := el.Value.(*renderEntry)
	t := c.tenants[e.tenant]
	t.order.Remove(el)
	t.bytes -= e.size
	if t.order.Len() == 0 {
		delete(c.tenants, e.tenant)
	}
	delete(c.entries, e.key)
	c.bytes -= e.size
}

// Size reports how many results and bytes the cache holds.
func (c *Cache) Size() (entries int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.bytes
}

// ownMetadata returns copies of objs whose top level and metadata maps are their
// own: setting a field of either (unstructured's SetX replace the maps they set,
// labels and annotations included) leaves objs as they were.
func ownMetadata(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		c := &unstructured.Unstructured{Object: maps.Clone(o.Object)}
		if m, ok := o.Object["metadata"].(map[string]any); ok {
			c.Object["metadata"] = maps.Clone(m)
		}
		out[i] = c
	}
	return out
}
