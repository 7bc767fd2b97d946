package apply

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper counts the mappings asked of it.
type countingMapper struct {
	meta.RESTMapper
	asked int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.asked++
	return c.RESTMapper.RESTMapping(gk, versions...)
}

// TestAManagerMapsEachKindOnce places ten objects of three kinds, one of which
// does not map: the two kinds that map are asked once each, the one that does not
// at every object (it may be served by the next). What the scopes know is asked
// again once older than scopeMemory, or once forgotten (a CRD was written).
func TestAManagerMapsEachKindOnce(t *testing.T) {
	configMap := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	role := schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	rm := meta.NewDefaultRESTMapper(nil)
	rm.Add(configMap, meta.RESTScopeNamespace)
	rm.Add(role, meta.RESTScopeRoot)
	mapper := &countingMapper{RESTMapper: rm}
	sc := newScopes(mapper)
	now := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	sc.now = func() time.Time { return now }
	opts := Options{DefaultNamespace: "apps"}

	var kinds []schema.GroupVersionKind
	for range 4 {
		kinds = append(kinds, configMap, role)
	}
	kinds = append(kinds, widget, widget)
	for i, gvk := range kinds {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		obj.SetName("x")
		obj.SetNamespace("elsewhere")
		err := normalize(obj, sc, opts)
		switch gvk {
		case configMap:
			if err != nil || obj.GetNamespace() != "elsewhere" {
				t.Errorf("object %d, a ConfigMap: namespace %q, %v; want its own", i, obj.GetNamespace(), err)
			}
		case role:
			if err != nil || obj.GetNamespace() != "" {
				t.Errorf("object %d, a ClusterRole: namespace %q, %v; want none", i, obj.GetNamespace(), err)
			}
		case widget:
			if !meta.IsNoMatchError(err) {
				t.Errorf("object %d, a Widget: %v; want no match", i, err)
			}
		}
	}
	if want := 2 + 2; mapper.asked != want {
		t.Errorf("the mapper was asked %d times for %d objects; want %d (once a kind that maps, each time for one that does not)", mapper.asked, len(kinds), want)
	}

	again := func(when string, want int) {
		t.Helper()
		mapper.asked = 0
		for range 3 {
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(configMap)
			obj.SetName("x")
			if err := normalize(obj, sc, opts); err != nil || obj.GetNamespace() != "apps" {
				t.Fatalf("%s: a ConfigMap without a namespace: namespace %q, %v; want apps", when, obj.GetNamespace(), err)
			}
		}
		if mapper.asked != want {
			t.Errorf("%s: the mapper was asked %d times for three ConfigMaps; want %d", when, mapper.asked, want)
		}
	}
	now = now.Add(scopeMemory)
	again("at scopeMemory", 0)
	now = now.Add(time.Second)
	again("past scopeMemory", 1)
	sc.forget()
	again("forgotten", 1)
}
