package apply

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
)

func TestVerifiedCacheIsBoundedInBytes(t *testing.T) {
	live := func(name string) *Object {
		o, err := NewObject(&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "resourceVersion": "1"},
			"data":     map[string]any{"k": strings.Repeat("x", 1000)},
		}})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	ref := func(name string) v1alpha1.ObjectRef {
		return v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Name: name}
	}
	c := newVerifiedCache(2500) // two of these objects, not three
	for _, name := range []string{"a", "b"} {
		c.remember(ref(name), digest{1}, "1", live(name), nil)
	}
	c.lookup(ref("a"), digest{1}, "1") // a is now the most recently used
	c.remember(ref("c"), digest{1}, "1", live("c"), nil)

	held := map[string]bool{}
	for _, name := range []string{"a", "b", "c"} {
		_, _, held[name] = c.lookup(ref(name), digest{1}, "1")
	}
	if !held["a"] || held["b"] || !held["c"] {
		t.Errorf("held %v; want a and c, the least recently used b dropped", held)
	}
	if c.bytes > c.maxBytes {
		t.Errorf("holds %d bytes, over its bound of %d", c.bytes, c.maxBytes)
	}
	c.forget(ref("a"))
	c.forget(ref("c"))
	if len(c.entries) != 0 || c.bytes != 0 || c.order.Len() != 0 {
		t.Errorf("after forgetting everything: %d entries, %d bytes, %d in order; want none", len(c.entries), c.bytes, c.order.Len())
	}
}
