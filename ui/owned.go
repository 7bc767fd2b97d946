package ui

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/health"
)

// ownedKinds are the kinds whose objects the tree shows under their owners:
// what Deployments, StatefulSets, DaemonSets, CronJobs and Jobs make, and the
// EndpointSlices the control plane keeps for a Service (its EndpointSlice
// controller sets the Service as their owner): one more list per namespace.
var ownedKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "ReplicaSet"},
	{Group: "batch", Version: "v1", Kind: "Job"},
	{Version: "v1", Kind: "Pod"},
	{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice"},
}

// ownerKinds are the kinds of the inventory that own objects of ownedKinds.
var ownerKinds = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}: true, {Group: "apps", Kind: "StatefulSet"}: true,
	{Group: "apps", Kind: "DaemonSet"}: true, {Group: "apps", Kind: "ReplicaSet"}: true,
	{Group: "batch", Kind: "CronJob"}: true, {Group: "batch", Kind: "Job"}: true,
	{Kind: "Service"}: true,
}

// maxOwnedDepth bounds the tree under one object (Deployment → ReplicaSet → Pod
// is two levels; CronJob → Job → Pod too).
const maxOwnedDepth = 3

// maxChildren bounds how many objects the tree shows under one owner.
const maxChildren = 50

// ownedNode is an object the tree shows under its owner, with its health.
type ownedNode struct {
	Kind, Name string
	Health     string
	Message    string
	Owned      []ownedNode
	More       int // children left out (maxChildren)
}

// ownerKey names an owner within a namespace.
type ownerKey struct {
	group, kind, name string
}

// ownedIndex holds the objects of ownedKinds of the namespaces read, by owner.
type ownedIndex struct {
	byOwner map[ownerKey][]*unstructured.Unstructured
	// unreadable says, per namespace and kind, why it could not be listed.
	unreadable []string
}

// readOwned lists, as the user, the objects of ownedKinds in each namespace of
// tree that holds an owner kind. What the user may not list is left out of the
// tree and said so.
func readOwned(ctx context.Context, c client.Reader, namespaces []string) *ownedIndex {
	idx := &ownedIndex{byOwner: map[ownerKey][]*unstructured.Unstructured{}}
	for _, ns := range namespaces {
		for _, gvk := range ownedKinds {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
				idx.unreadable = append(idx.unreadable, fmt.Sprintf("%s in %s: %v", gvk.Kind, ns, err))
				continue
			}
			for i := range list.Items {
				o := &list.Items[i]
				o.SetGroupVersionKind(gvk)
				for _, ref := range o.GetOwnerReferences() {
					gv, _ := schema.ParseGroupVersion(ref.APIVersion)
					k := ownerKey{gv.Group, ref.Kind, ns + "/" + ref.Name}
					idx.byOwner[k] = append(idx.byOwner[k], o)
				}
			}
		}
	}
	return idx
}

// ownerNamespaces are the namespaces of s's inventory that hold an owner kind.
func ownerNamespaces(refs []v1alpha1.ObjectRef) []string {
	var out []string
	for _, r := range refs {
		if ownerKinds[schema.GroupKind{Group: r.Group, Kind: r.Kind}] && !slices.Contains(out, r.Namespace) {
			out = append(out, r.Namespace)
		}
	}
	slices.Sort(out)
	return out
}

// children are the objects owned by group/kind namespace/name, and theirs, each
// with its health as the agent would judge it (health.Compute).
func (idx *ownedIndex) children(group, kind, namespace, name string, depth int) ([]ownedNode, int) {
	if depth >= maxOwnedDepth {
		return nil, 0
	}
	owned := idx.byOwner[ownerKey{group, kind, namespace + "/" + name}]
	slices.SortFunc(owned, func(a, b *unstructured.Unstructured) int {
		if c := b.GetCreationTimestamp().Compare(a.GetCreationTimestamp().Time); c != 0 {
			return c // newest first: the current ReplicaSet above the old
		}
		return cmp.Compare(a.GetName(), b.GetName())
	})
	more := max(0, len(owned)-maxChildren)
	owned = owned[:min(len(owned), maxChildren)]
	nodes := make([]ownedNode, 0, len(owned))
	for _, o := range owned {
		res := health.Compute(o)
		n := ownedNode{Kind: o.GetKind(), Name: o.GetName(), Health: string(res.Code), Message: oneLine(res.Message)}
		n.Owned, n.More = idx.children(o.GroupVersionKind().Group, o.GetKind(), namespace, o.GetName(), depth+1)
		nodes = append(nodes, n)
	}
	return nodes, more
}
