package source

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRenderCacheIsBoundedInBytes(t *testing.T) {
	objs := []*unstructured.Unstructured{{Object: map[string]any{"kind": "ConfigMap", "data": map[string]any{"k": "v"}}}}
	one := heldSize(objs)
	c := newRenderCache(2*one + one/2)
	c.put("a", rendered{objs: objs})
	c.put("b", rendered{objs: objs})
	c.get("a") // a is now the most recently used
	c.put("c", rendered{objs: objs})

	held := map[string]bool{}
	for _, k := range []string{"a", "b", "c"} {
		_, held[k] = c.get(k)
	}
	if diff := cmp.Diff(map[string]bool{"a": true, "b": false, "c": true}, held); diff != "" {
		t.Errorf("held after going over two and a half results' bytes; the least recently used goes (-want +got):\n%s", diff)
	}
	if n, bytes := c.size(); n != 2 || bytes != 2*one {
		t.Errorf("size = %d entries, %d bytes; want 2, %d", n, bytes, 2*one)
	}

	huge := []*unstructured.Unstructured{objs[0], objs[0], objs[0]}
	c.put("huge", rendered{objs: huge})
	if _, ok := c.get("huge"); ok {
		t.Error("a result larger than the whole budget was kept")
	}

	c.forget("a")
	if n, bytes := c.size(); n != 1 || bytes != one {
		t.Errorf("after forgetting a: %d entries, %d bytes; want 1, %d", n, bytes, one)
	}
}
