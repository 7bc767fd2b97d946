package apply

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	gosync "sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// verifiedCache remembers, per object, the last desired state (as a hash) verified
// to match the cluster and the live object it matched. While both are unchanged, the
// object needs no dry-run: that is what makes a converged resync free.
//
// It holds at most maxBytes of live objects (their size as JSON), dropping the
// least recently used first: a dropped object costs one dry-run at its next
// apply. Objects pruned or released are forgotten at once.
type verifiedCache struct {
	mu       gosync.Mutex
	maxBytes int64
	bytes    int64
	order    *list.List // of ObjectRef, most recently used first
	entries  map[ObjectRef]verified
}

type verified struct {
	hash    string
	live    *unstructured.Unstructured
	ignored []IgnoredField
	size    int64
	el      *list.Element
}

// DefaultVerifiedCacheBytes bounds the verified-object cache unless
// ManagerOptions.VerifiedCacheBytes says otherwise.
const DefaultVerifiedCacheBytes = 32 << 20

func newVerifiedCache(maxBytes int64) *verifiedCache {
	if maxBytes <= 0 {
		maxBytes = DefaultVerifiedCacheBytes
	}
	return &verifiedCache{maxBytes: maxBytes, order: list.New(), entries: map[ObjectRef]verified{}}
}

// lookup returns a copy of the live object verified against hash, if its
// resourceVersion is still rv.
// The fields that were ignored come back with it: they are the same while the
// object and its rules are.
func (c *verifiedCache) lookup(ref ObjectRef, hash, rv string) (*unstructured.Unstructured, []IgnoredField, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.entries[ref]
	if !ok || hash == "" || v.hash != hash || v.live.GetResourceVersion() != rv {
		return nil, nil, false
	}
	c.order.MoveToFront(v.el)
	return v.live.DeepCopy(), v.ignored, true
}

func (c *verifiedCache) remember(ref ObjectRef, hash string, live *unstructured.Unstructured, ignored []IgnoredField) {
	data, err := json.Marshal(live.Object)
	size := int64(len(data))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(ref)
	if err != nil || size > c.maxBytes {
		return // dry-run next time
	}
	c.entries[ref] = verified{hash: hash, live: live.DeepCopy(), ignored: ignored, size: size, el: c.order.PushFront(ref)}
	c.bytes += size
	for c.bytes > c.maxBytes {
		c.remove(c.order.Back().Value.(ObjectRef))
	}
}

func (c *verifiedCache) forget(ref ObjectRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(ref)
}

func (c *verifiedCache) remove(ref ObjectRef) {
	v, ok := c.entries[ref]
	if !ok {
		return
	}
	c.order.Remove(v.el)
	c.bytes -= v.size
	delete(c.entries, ref)
}

// hashOf identifies a desired object, the field manager applying it and salt
// (whatever else changes what is sent: the ignore rules that select it). JSON
// encoding of maps is ordered by key, so equal objects hash equally.
func hashOf(obj *unstructured.Unstructured, fieldManager, salt string) string {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return "" // never matches a remembered hash: the object is simply dry-run
	}
	sum := sha256.Sum256(append(append(data, fieldManager...), salt...))
	return hex.EncodeToString(sum[:])
}
