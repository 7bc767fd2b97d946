package wall

import (
	"errors"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"tether.dev/tether/source/render"
)

func TestRenderCacheIsBoundedInBytes(t *testing.T) {
	objs := []*unstructured.Unstructured{{Object: map[string]any{"kind": "ConfigMap", "data": map[string]any{"k": "v"}}}}
	one := heldSizeOf(objs)
	c := NewCache(2*one + one/2)
	c.Put("a", "", Rendered{objs: objs})
	c.Put("b", "", Rendered{objs: objs})
	c.Get("a") // a is now the most recently used
	c.Put("c", "", Rendered{objs: objs})

	held := map[string]bool{}
	for _, k := range []string{"a", "b", "c"} {
		_, held[k] = c.Get(k)
	}
	if diff := cmp.Diff(map[string]bool{"a": true, "b": false, "c": true}, held); diff != "" {
		t.Errorf("held after going over two and a half results' bytes; the least recently used goes (-want +got):\n%s", diff)
	}
	if n, bytes := c.Size(); n != 2 || bytes != 2*one {
		t.Errorf("size = %d entries, %d bytes; want 2, %d", n, bytes, 2*one)
	}

	huge := []*unstructured.Unstructured{objs[0], objs[0], objs[0]}
	c.Put("huge", "", Rendered{objs: huge})
	if _, ok := c.Get("huge"); ok {
		t.Error("a result larger than the whole budget was kept")
	}

	c.Forget("a")
	if n, bytes := c.Size(); n != 1 || bytes != one {
		t.Errorf("after forgetting a: %d entries, %d bytes; want 1, %d", n, bytes, one)
	}
}

// TestTheRenderCacheIsSharedFairlyBetweenTenants: a tenant alone may fill the
// cache, but one rendering more than the others pushes out its own renders,
// not theirs, while it holds more than they do.
func TestTheRenderCacheIsSharedFairlyBetweenTenants(t *testing.T) {
	objs := []*unstructured.Unstructured{{Object: map[string]any{"kind": "ConfigMap", "data": map[string]any{"k": "v"}}}}
	one := heldSizeOf(objs)
	held := func(c *Cache, keys ...string) map[string]bool {
		out := map[string]bool{}
		for _, k := range keys {
			_, out[k] = c.Get(k)
		}
		return out
	}

	t.Run("a tenant alone fills the cache, least recently used first out", func(t *testing.T) {
		c := NewCache(4 * one)
		for _, k := range []string{"a1", "a2", "a3", "a4", "a5"} {
			c.Put(k, "a", Rendered{objs: objs})
		}
		want := map[string]bool{"a1": false, "a2": true, "a3": true, "a4": true, "a5": true}
		if diff := cmp.Diff(want, held(c, "a1", "a2", "a3", "a4", "a5")); diff != "" {
			t.Errorf("held (-want +got):\n%s", diff)
		}
	})
	t.Run("a tenant rendering more than another pushes out its own renders", func(t *testing.T) {
		c := NewCache(4 * one)
		c.Put("b1", "b", Rendered{objs: objs})
		for _, k := range []string{"a1", "a2", "a3", "a4", "a5", "a6"} {
			c.Put(k, "a", Rendered{objs: objs})
		}
		// b1 is the least recently used of all, and stays: a holds three, b one.
		want := map[string]bool{"b1": true, "a1": false, "a2": false, "a3": false, "a4": true, "a5": true, "a6": true}
		if diff := cmp.Diff(want, held(c, "b1", "a1", "a2", "a3", "a4", "a5", "a6")); diff != "" {
			t.Errorf("held (-want +got):\n%s", diff)
		}
	})
	t.Run("then the other renders more: the one holding the most gives way", func(t *testing.T) {
		c := NewCache(4 * one)
		for _, k := range []string{"a1", "a2", "a3", "a4"} {
			c.Put(k, "a", Rendered{objs: objs})
		}
		c.Put("b1", "b", Rendered{objs: objs}) // a holds four: a1 goes
		c.Put("b2", "b", Rendered{objs: objs}) // a holds three: a2 goes
		c.PutError("b3", "b", errors.New("x")) // small; a holds two, b two and a bit: b1 goes
		want := map[string]bool{"a1": false, "a2": false, "a3": true, "a4": true, "b1": false, "b2": true}
		if diff := cmp.Diff(want, held(c, "a1", "a2", "a3", "a4", "b1", "b2")); diff != "" {
			t.Errorf("held (-want +got):\n%s", diff)
		}
		if c.Failure("b3") == nil {
			t.Error("b's lasting failure was not kept")
		}
		if _, bytes := c.Size(); bytes > 4*one {
			t.Errorf("the cache holds %d bytes, over its budget of %d", bytes, 4*one)
		}
	})
}

// BenchmarkPutIntoAFullRenderCache: a put that removes an entry from a full
// cache of 100,000 entries of 10 tenants costs what a map lookup per tenant
// does, not a walk of the entries.
func BenchmarkPutIntoAFullRenderCache(b *testing.B) {
	const entries, tenants = 100_000, 10
	err := errors.New("a lasting failure")
	c := NewCache(1 << 62)
	for i := range entries {
		c.PutError(strconv.Itoa(i), strconv.Itoa(i%tenants), err)
	}
	_, c.maxBytes = c.Size()
	b.ResetTimer()
	for i := range b.N {
		c.PutError("new"+strconv.Itoa(i), strconv.Itoa(i%tenants), err)
	}
}

// BenchmarkAHitOfTheRenderCache is what a converged resync of a revision of
// 1,000 objects pays at every interval to read its render from the cache: the
// lookup, and the objects made the caller's own.
func BenchmarkAHitOfTheRenderCache(b *testing.B) {
	objs, err := render.DecodeManifests([]byte(manifestsOfApps(250)))
	if err != nil {
		b.Fatal(err)
	}
	c := NewCache(1 << 40)
	c.Put("rev", "", Rendered{objs: objs})
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r, ok := c.Get("rev")
		if !ok || len(r.ForCaller()) != len(objs) {
			b.Fatal("not held")
		}
	}
}
