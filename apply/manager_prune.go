package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
)

// Prune deletes the objects refs names that the caller owns, with background
// propagation, namespaced objects first, then cluster-scoped ones, and CRDs and
// Namespaces last (deleting those takes everything inside them along). It never
// deletes an object owned by someone else or annotated tether.dev/prune: disabled;
// such objects come back as ActionSkipped. The returned error joins the
// *ObjectError of every delete that failed.
func (m *Manager) Prune(ctx context.Context, refs []v1alpha1.ObjectRef, opts PruneOptions) (*ChangeSet, error) {
	return eachInDeletionOrder(ctx, refs, opts, m.pruneOne)
}

func (m *Manager) pruneOne(ctx context.Context, ref v1alpha1.ObjectRef, opts PruneOptions) Change {
	defer m.verified.forget(ref) // whatever happens, it is no longer applied as verified
	live, skip := m.owned(ctx, ref, opts)
	if skip != nil {
		return *skip
	}
	if live.GetAnnotations()[v1alpha1.PruneAnnotation] == "disabled" {
		return Change{Object: ref, Action: ActionSkipped, Note: NoteProtected}
	}
	if live.GetDeletionTimestamp() != nil || opts.DryRun {
		note := NoteDryRun
		if live.GetDeletionTimestamp() != nil {
			note = NoteTerminating
		}
		kept, err := NewObject(live)
		if err != nil {
			return Change{Object: ref, Action: ActionFailed, Err: &ObjectError{Object: ref, Op: "read", Err: err}}
		}
		return Change{Object: ref, Action: ActionPruned, Live: kept, Note: note}
	}
	uid := live.GetUID()
	err := m.client.Delete(ctx, live, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return Change{Object: ref, Action: ActionSkipped, Note: NoteGone}
	case err != nil:
		return Change{Object: ref, Action: ActionFailed, Err: &ObjectError{Object: ref, Op: "delete", Err: err}}
	}
	return Change{Object: ref, Action: ActionPruned}
}

// Orphan releases the objects refs names that the caller owns: it removes the
// tether.dev/owned-by annotation, the tether.dev/sync label and opts.FieldManager's
// managedFields entry, and
// leaves the objects and every field value in place.
func (m *Manager) Orphan(ctx context.Context, refs []v1alpha1.ObjectRef, opts PruneOptions) (*ChangeSet, error) {
	return eachInDeletionOrder(ctx, refs, opts, m.orphanOne)
}

// eachInDeletionOrder runs one of Prune's or Orphan's per-object steps over refs,
// rank by rank of the deletion order, the objects of one rank concurrently.
func eachInDeletionOrder(ctx context.Context, refs []v1alpha1.ObjectRef, opts PruneOptions, step func(context.Context, v1alpha1.ObjectRef, PruneOptions) Change) (*ChangeSet, error) {
	workers := max(opts.Concurrency, 1)
	cs := &ChangeSet{}
	for _, rank := range deletionRanks(refs) {
		changes := make([]Change, len(rank))
		forEach(len(rank), workers, func(i int) { changes[i] = step(ctx, rank[i], opts) })
		cs.Changes = append(cs.Changes, changes...)
	}
	return cs, failures(cs.Changes)
}

func (m *Manager) orphanOne(ctx context.Context, ref v1alpha1.ObjectRef, opts PruneOptions) Change {
	live, skip := m.owned(ctx, ref, opts)
	if skip != nil {
		return *skip
	}
	patch, err := releasePatch(live, opts)
	if err == nil {
		err = m.client.Patch(ctx, live, client.RawPatch(types.JSONPatchType, patch))
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return Change{Object: ref, Action: ActionFailed, Err: &ObjectError{Object: ref, Op: "orphan", Err: err}}
	}
	m.verified.forget(ref)
	return Change{Object: ref, Action: ActionOrphaned}
}

// owned reads the live object and returns it if opts.Owner owns it; otherwise the
// Change that skips it.
func (m *Manager) owned(ctx context.Context, ref v1alpha1.ObjectRef, opts PruneOptions) (*unstructured.Unstructured, *Change) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(ref.GroupVersionKind())
	err := m.client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, live)
	switch {
	case apierrors.IsNotFound(err):
		return nil, &Change{Object: ref, Action: ActionSkipped, Note: NoteGone}
	case meta.IsNoMatchError(err):
		return nil, &Change{Object: ref, Action: ActionSkipped, Note: NoteKindGone}
	case apierrors.IsForbidden(err):
		return nil, &Change{Object: ref, Action: ActionSkipped, Note: NoteForbidden}
	case err != nil:
		return nil, &Change{Object: ref, Action: ActionFailed, Err: &ObjectError{Object: ref, Op: "read", Err: err}}
	case opts.Owner == "" || live.GetAnnotations()[v1alpha1.OwnedByAnnotation] != opts.Owner:
		return nil, &Change{Object: ref, Action: ActionSkipped, Note: NoteNotOwned}
	case opts.Keep[live.GetUID()]:
		return nil, &Change{Object: ref, Action: ActionSkipped, Note: NoteStillWants}
	}
	return live, nil
}

// releasePatch is a JSON patch that removes the owner annotation and the field
// manager's entries, each guarded by a test so that a concurrent change fails the
// patch instead of removing the wrong entry.
func releasePatch(live *unstructured.Unstructured, opts PruneOptions) ([]byte, error) {
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value,omitempty"`
	}
	ownerPath := "/metadata/annotations/" + strings.ReplaceAll(v1alpha1.OwnedByAnnotation, "/", "~1")
	ops := []op{{Op: "test", Path: ownerPath, Value: opts.Owner}, {Op: "remove", Path: ownerPath}}
	if v, ok := live.GetLabels()[v1alpha1.SyncLabel]; ok {
		labelPath := "/metadata/labels/" + strings.ReplaceAll(v1alpha1.SyncLabel, "/", "~1")
		ops = append(ops, op{Op: "test", Path: labelPath, Value: v}, op{Op: "remove", Path: labelPath})
	}
	fields := live.GetManagedFields()
	for i := len(fields) - 1; i >= 0; i-- { // from the end, so earlier indexes stay valid
		if fields[i].Manager == opts.FieldManager {
			path := fmt.Sprintf("/metadata/managedFields/%d", i)
			ops = append(ops, op{Op: "test", Path: path + "/manager", Value: opts.FieldManager}, op{Op: "remove", Path: path})
		}
	}
	return json.Marshal(ops)
}

// deletionRanks groups refs in the order they are deleted: namespaced objects, then
// cluster-scoped ones, then CRDs, then Namespaces (deleting those takes everything
// inside them along); by name within each for a stable order.
func deletionRanks(refs []v1alpha1.ObjectRef) [][]v1alpha1.ObjectRef {
	rank := func(r v1alpha1.ObjectRef) int {
		switch {
		case r.Group == "" && r.Kind == "Namespace":
			return 3
		case r.Group == "apiextensions.k8s.io" && r.Kind == "CustomResourceDefinition":
			return 2
		case r.Namespace == "":
			return 1
		}
		return 0
	}
	ranks := make([][]v1alpha1.ObjectRef, 4)
	for _, r := range refs {
		ranks[rank(r)] = append(ranks[rank(r)], r)
	}
	var out [][]v1alpha1.ObjectRef
	for _, rank := range ranks {
		if len(rank) > 0 {
			sort.Slice(rank, func(i, j int) bool { return rank[i].String() < rank[j].String() })
			out = append(out, rank)
		}
	}
	return out
}
