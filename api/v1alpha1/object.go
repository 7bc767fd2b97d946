package v1alpha1

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ObjectRef identifies one object a Sync manages: its group, version, kind,
// namespace (empty for cluster-scoped objects) and name. It is the one identity
// every layer uses: the inventory's entries (ID), the status's resources and
// fields given up (embedded inline, so their JSON is flat), the apply package's
// changes and errors, and the CLI's views.
type ObjectRef struct {
	// +optional
	Group string `json:"group,omitempty"`
	// +required
	Version string `json:"version"`
	// +required
	Kind string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +required
	Name string `json:"name"`
}

// NewObjectRef is the identity of the object of kind gvk named name in namespace
// (empty for cluster-scoped objects).
func NewObjectRef(gvk schema.GroupVersionKind, namespace, name string) ObjectRef {
	return ObjectRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: namespace, Name: name}
}

// GroupVersionKind is the group, version and kind of the object.
func (r ObjectRef) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
}

// String writes "Kind/namespace/name", or "Kind/name" for cluster-scoped objects:
// the form every message about an object uses.
func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return fmt.Sprintf("%s/%s", r.Kind, r.Name)
	}
	return fmt.Sprintf("%s/%s/%s", r.Kind, r.Namespace, r.Name)
}

// Key identifies the object across versions of its kind: an object whose
// apiVersion changes in git is the same object. It is the one key by which
// inventories, statuses and change sets are matched.
func (r ObjectRef) Key() string {
	return r.Group + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name
}

// CompareKey orders r and o as their Keys compare (strings.Compare), without
// building either: inventories are sorted by Key at each reconcile.
func (r ObjectRef) CompareKey(o ObjectRef) int {
	a := [...]string{r.Group, "/", r.Kind, "/", r.Namespace, "/", r.Name}
	b := [...]string{o.Group, "/", o.Kind, "/", o.Namespace, "/", o.Name}
	i, j, x, y := 0, 0, 0, 0 // the part of a and of b, and the offset in each
	for {
		for i < len(a) && x == len(a[i]) {
			i, x = i+1, 0
		}
		for j < len(b) && y == len(b[j]) {
			j, y = j+1, 0
		}
		switch {
		case i == len(a) && j == len(b):
			return 0
		case i == len(a):
			return -1
		case j == len(b):
			return 1
		}
		n := min(len(a[i])-x, len(b[j])-y)
		if c := strings.Compare(a[i][x:x+n], b[j][y:y+n]); c != 0 {
			return c
		}
		x, y = x+n, y+n
	}
}

// ID is the object's whole identity, version included, in one string:
// "<namespace>_<name>_<group>_<kind>_<version>", the form of the entries of
// status.inventory that agents before status.objects wrote. No namespace, group,
// kind or version can hold an underscore, so the form parses back even for the few
// kinds whose names may (RBAC roles).
func (r ObjectRef) ID() string {
	return r.Namespace + "_" + r.Name + "_" + r.Group + "_" + r.Kind + "_" + r.Version
}

// ParseInventoryEntry parses an entry of status.inventory (as agents before
// status.objects wrote it), written by ObjectRef.ID.
func ParseInventoryEntry(id string) (ObjectRef, error) {
	ns, rest, ok := strings.Cut(id, "_")
	parts := strings.Split(rest, "_")
	if !ok || len(parts) < 4 {
		return ObjectRef{}, fmt.Errorf("inventory entry %q is not <namespace>_<name>_<group>_<kind>_<version>", id)
	}
	n := len(parts)
	r := ObjectRef{
		Namespace: ns, Name: strings.Join(parts[:n-3], "_"),
		Group: parts[n-3], Kind: parts[n-2], Version: parts[n-1],
	}
	if r.Name == "" || r.Kind == "" || r.Version == "" {
		return ObjectRef{}, fmt.Errorf("inventory entry %q lacks a name, kind or version", id)
	}
	return r, nil
}
