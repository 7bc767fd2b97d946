package apply

import (
	"testing"

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

// TestOneApplyAllMapsEachKindOnce places ten objects of three kinds, one of which
// does not map: the two kinds that map are asked once each, the one that does not
// at every object (it may be served by the next).
func TestOneApplyAllMapsEachKindOnce(t *testing.T) {
	configMap := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	role := schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	rm := meta.NewDefaultRESTMapper(nil)
	rm.Add(configMap, meta.RESTScopeNamespace)
	rm.Add(role, meta.RESTScopeRoot)
	mapper := &countingMapper{RESTMapper: rm}
	sc := newScopes(mapper)
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
}
