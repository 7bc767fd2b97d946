package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	gosync "sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// verifiedCache remembers, per object, the last desired state (as a hash) verified
// to match the cluster and the live object it matched. While both are unchanged, the
// object needs no dry-run: that is what makes a converged resync free.
type verifiedCache struct {
	mu      gosync.Mutex
	entries map[ObjectRef]verified
}

type verified struct {
	hash    string
	live    *unstructured.Unstructured
	ignored []IgnoredField
}

func newVerifiedCache() *verifiedCache {
	return &verifiedCache{entries: map[ObjectRef]verified{}}
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
	return v.live.DeepCopy(), v.ignored, true
}

func (c *verifiedCache) remember(ref ObjectRef, hash string, live *unstructured.Unstructured, ignored []IgnoredField) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[ref] = verified{hash: hash, live: live.DeepCopy(), ignored: ignored}
}

func (c *verifiedCache) forget(ref ObjectRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
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
