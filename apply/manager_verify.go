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
	hash string
	live *unstructured.Unstructured
}

func newVerifiedCache() *verifiedCache {
	return &verifiedCache{entries: map[ObjectRef]verified{}}
}

// lookup returns a copy of the live object verified against hash, if its
// resourceVersion is still rv.
func (c *verifiedCache) lookup(ref ObjectRef, hash, rv string) (*unstructured.Unstructured, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.entries[ref]
	if !ok || hash == "" || v.hash != hash || v.live.GetResourceVersion() != rv {
		return nil, false
	}
	return v.live.DeepCopy(), true
}

func (c *verifiedCache) remember(ref ObjectRef, hash string, live *unstructured.Unstructured) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[ref] = verified{hash: hash, live: live.DeepCopy()}
}

func (c *verifiedCache) forget(ref ObjectRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, ref)
}

// hashOf identifies a desired object and the field manager applying it. JSON
// encoding of maps is ordered by key, so equal objects hash equally.
func hashOf(obj *unstructured.Unstructured, fieldManager string) string {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return "" // never matches a remembered hash: the object is simply dry-run
	}
	sum := sha256.Sum256(append(data, fieldManager...))
	return hex.EncodeToString(sum[:])
}
