package apply

import (
	"container/list"
	"crypto/sha256"
	gosync "sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
)

// verifiedCache remembers, per object, the last desired state (as a hash) verified
// to match the cluster and the live object it matched. While both are unchanged, the
// object needs no dry-run: that is what makes a converged resync free.
//
// The live object is kept as an Object (its JSON, without managedFields): what a
// caller reads of an unchanged object is its state (health is judged from it), not
// who owns which field, and JSON takes several times less memory than the same
// object decoded (maps of maps). The Change that reports the object shares it. It
// holds at most maxBytes of that JSON, dropping the least recently used first: a
// dropped object costs one dry-run at its next apply. Objects pruned or released
// are forgotten at once.
type verifiedCache struct {
	mu       gosync.Mutex
	maxBytes int64
	bytes    int64
	order    *list.List // of v1alpha1.ObjectRef, most recently used first
	entries  map[v1alpha1.ObjectRef]verified
}

type verified struct {
	hash            digest
	resourceVersion string
	live            *Object
	ignored         []IgnoredField
	el              *list.Element
}

// DefaultVerifiedCacheBytes bounds the verified-object cache unless
// ManagerOptions.VerifiedCacheBytes says otherwise.
const DefaultVerifiedCacheBytes = 32 << 20

func newVerifiedCache(maxBytes int64) *verifiedCache {
	if maxBytes <= 0 {
		maxBytes = DefaultVerifiedCacheBytes
	}
	return &verifiedCache{maxBytes: maxBytes, order: list.New(), entries: map[v1alpha1.ObjectRef]verified{}}
}

// lookup returns the live object verified against hash, if its resourceVersion is
// still rv. The fields that were ignored come back with it: they are the same
// while the object and its rules are.
func (c *verifiedCache) lookup(ref v1alpha1.ObjectRef, hash digest, rv string) (*Object, []IgnoredField, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.entries[ref]
	if !ok || hash == (digest{}) || v.hash != hash || v.resourceVersion != rv {
		return nil, nil, false
	}
	c.order.MoveToFront(v.el)
	return v.live, v.ignored, true
}

// remember records that live, at resourceVersion rv, matched the desired object
// of hash.
func (c *verifiedCache) remember(ref v1alpha1.ObjectRef, hash digest, rv string, live *Object, ignored []IgnoredField) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(ref)
	if live == nil || live.Size() > c.maxBytes {
		return // dry-run next time
	}
	c.entries[ref] = verified{hash: hash, resourceVersion: rv, live: live, ignored: ignored, el: c.order.PushFront(ref)}
	c.bytes += live.Size()
	for c.bytes > c.maxBytes {
		c.remove(c.order.Back().Value.(v1alpha1.ObjectRef))
	}
}

func (c *verifiedCache) forget(ref v1alpha1.ObjectRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(ref)
}

func (c *verifiedCache) remove(ref v1alpha1.ObjectRef) {
	v, ok := c.entries[ref]
	if !ok {
		return
	}
	c.order.Remove(v.el)
	c.bytes -= v.live.Size()
	delete(c.entries, ref)
}

// digest is what hashOf makes of a desired object; the zero digest matches
// nothing. Kept as its 32 bytes, not as hex: one a verified object.
type digest [sha256.Size]byte

// hashOf identifies a desired object, the field manager applying it and salt
// (whatever else changes what is sent: the ignore rules that select it). Equal
// objects hash equally: maps are written in the order of their keys (digestWriter).
// A converged reconcile hashes every object of its Sync, so the writer allocates
// nothing of its own per object.
func hashOf(obj *unstructured.Unstructured, fieldManager, salt string) digest {
	w := digestWriters.Get().(*digestWriter)
	defer digestWriters.Put(w)
	w.reset()
	if err := w.value(obj.Object, 0); err != nil {
		return digest{} // never matches a remembered hash: the object is simply dry-run
	}
	w.string(fieldManager)
	w.string(salt)
	return w.sum()
}
