package source

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRenderCacheIsBoundedInBytes(t *testing.T) {
	c := newRenderCache(100)
	objs := []*unstructured.Unstructured{{}}
	c.put("a", rendered{objs: objs, size: 40})
	c.put("b", rendered{objs: objs, size: 40})
	c.get("a") // a is now the most recently used
	c.put("c", rendered{objs: objs, size: 40})

	held := map[string]bool{}
	for _, k := range []string{"a", "b", "c"} {
		_, held[k] = c.get(k)
	}
	if diff := cmp.Diff(map[string]bool{"a": true, "b": false, "c": true}, held); diff != "" {
		t.Errorf("held after going over 100 bytes; the least recently used goes (-want +got):\n%s", diff)
	}
	if n, bytes := c.size(); n != 2 || bytes != 80 {
		t.Errorf("size = %d entries, %d bytes; want 2, 80", n, bytes)
	}

	c.put("huge", rendered{objs: objs, size: 101})
	if _, ok := c.get("huge"); ok {
		t.Error("a result larger than the whole budget was kept")
	}

	c.forget("a")
	if n, bytes := c.size(); n != 1 || bytes != 40 {
		t.Errorf("after forgetting a: %d entries, %d bytes; want 1, 40", n, bytes)
	}
}
