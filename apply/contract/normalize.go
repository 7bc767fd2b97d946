package contract

import (
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
)

// RefOf returns the identity of obj.
func RefOf(obj *unstructured.Unstructured) v1alpha1.ObjectRef {
	return v1alpha1.NewObjectRef(obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName())
}

// noise are the fields the API server or other controllers own that never say
// anything about whether an object matches git.
var noise = [][]string{
	{"metadata", "managedFields"},
	{"metadata", "resourceVersion"},
	{"metadata", "generation"},
	{"metadata", "creationTimestamp"},
	{"metadata", "uid"},
	{"metadata", "selfLink"},
	{"status"},
}

// Normalize returns a copy of obj without the fields apply's Compare ignores; it is also the
// form `tether diff` prints.
func Normalize(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	for _, path := range noise {
		unstructured.RemoveNestedField(out.Object, path...)
	}
	return out
}

// WithoutManagedFields returns obj without metadata.managedFields: the same object
// when it has none, else a copy that shares everything but its top level and
// metadata with obj. The apply reads an object's managedFields (who owns what)
// while comparing it; what it returns and keeps needs none, and they are often
// the larger part of an object.
func WithoutManagedFields(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	meta, ok := obj.Object["metadata"].(map[string]any)
	if !ok {
		return obj
	}
	if _, ok := meta["managedFields"]; !ok {
		return obj
	}
	out := &unstructured.Unstructured{Object: maps.Clone(obj.Object)}
	meta = maps.Clone(meta)
	delete(meta, "managedFields")
	out.Object["metadata"] = meta
	return out
}
