package apply

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Manager applies objects to one cluster. It is safe for concurrent use.
type Manager struct {
	client client.Client
	mapper meta.RESTMapper
}

// NewManager returns a Manager that writes through c. c should read from the API
// server, not from a cache, because comparisons need the live object.
func NewManager(c client.Client) *Manager {
	return &Manager{client: c, mapper: c.RESTMapper()}
}

// Options control one ApplyAll call.
type Options struct {
	// FieldManager owns the applied fields; it must be stable across versions of
	// Tether, or field ownership is lost on upgrade.
	FieldManager string
	// DefaultNamespace is given to namespaced objects that name no namespace.
	DefaultNamespace string
	// Concurrency is how many objects are dry-run or applied at once.
	Concurrency int
}

// DefaultOptions returns the options Tether runs with.
func DefaultOptions() Options {
	return Options{FieldManager: "tether", Concurrency: 8}
}

// ObjectRef identifies an object across versions of its kind.
type ObjectRef struct {
	Group, Version, Kind string
	Namespace, Name      string
}

// RefOf returns the reference of obj.
func RefOf(obj *unstructured.Unstructured) ObjectRef {
	gvk := obj.GroupVersionKind()
	return ObjectRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// GroupKind is the group and kind of the object.
func (r ObjectRef) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: r.Group, Kind: r.Kind}
}

// String writes "Kind/namespace/name", or "Kind/name" for cluster-scoped objects:
// the form every message about an object uses.
func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return fmt.Sprintf("%s/%s", r.Kind, r.Name)
	}
	return fmt.Sprintf("%s/%s/%s", r.Kind, r.Namespace, r.Name)
}

// Action is what applying an object did.
type Action string

// Actions, as counted in tether_apply_objects_total.
const (
	ActionCreated    Action = "created"
	ActionConfigured Action = "configured"
	ActionUnchanged  Action = "unchanged"
	ActionFailed     Action = "failed"
	// ActionSkipped marks an object that was not dry-run or applied because another
	// object of its batch failed first.
	ActionSkipped Action = "skipped"
)

// Change is the outcome for one object.
type Change struct {
	Object ObjectRef
	Action Action
	// Live is the object as the cluster holds it after the call (nil on failure).
	Live *unstructured.Unstructured
	// Err is set when Action is ActionFailed.
	Err error
}

// ChangeSet is the outcome of one ApplyAll, in the order objects were applied.
type ChangeSet struct {
	Changes []Change
}

// Count returns how many changes had action a.
func (cs *ChangeSet) Count(a Action) int {
	n := 0
	for _, c := range cs.Changes {
		if c.Action == a {
			n++
		}
	}
	return n
}

// Changed reports whether any object was written.
func (cs *ChangeSet) Changed() bool {
	return cs.Count(ActionCreated)+cs.Count(ActionConfigured) > 0
}
