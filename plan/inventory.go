package plan

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/source"
)

// MaxInventoryBytes bounds what the ids of status.inventory take: 640 KiB, about
// 10,000 objects with names of ordinary length (CheckSize refuses more), so that a
// Sync's status stays under half of etcd's object limit by construction.
const MaxInventoryBytes = 640 << 10

// HeldError is a step Tether refused to take on its own: an empty render, a
// revision too large to track, a prune over the limit. It stalls the Sync until
// git or the Sync changes; Reason is the reason of its conditions.
type HeldError struct {
	Reason string
	Msg    string
}

func (e *HeldError) Error() string { return e.Msg }

// CheckEmpty refuses a render that yields no objects unless the Sync allows it: an
// emptied path is far more often a mistake (a bad merge, a moved directory) than an
// intent to delete everything.
func CheckEmpty(obj *v1alpha1.Sync, snap *source.Snapshot) error {
	if len(snap.Objects) > 0 || obj.Spec.AllowEmpty {
		return nil
	}
	return &HeldError{Reason: v1alpha1.ReasonEmptyRender, Msg: fmt.Sprintf(
		"path %q renders no objects at %s; nothing was applied or pruned. Set spec.allowEmpty: true to prune everything this Sync applied",
		snap.Path, snap.Revision)}
}

// CheckSize refuses a revision with more objects than the inventory can hold,
// before anything of it is applied.
func CheckSize(obj *v1alpha1.Sync, snap *source.Snapshot) error {
	entries := make([]v1alpha1.ObjectRef, len(snap.Objects))
	for i, o := range snap.Objects {
		ns := o.GetNamespace()
		if ns == "" {
			ns = obj.Spec.Destination.Namespace
		}
		entries[i] = v1alpha1.NewObjectRef(o.GroupVersionKind(), ns, o.GetName())
	}
	if n := InventoryBytes(entries); n > MaxInventoryBytes {
		return &HeldError{Reason: v1alpha1.ReasonRevisionTooLarge, Msg: fmt.Sprintf(
			"path %q renders %d objects at %s, whose inventory (%d KiB) would not fit in the Sync's status (at most %d KiB); "+
				"nothing was applied. Split the path into several Syncs", snap.Path, len(snap.Objects), snap.Revision, n>>10, MaxInventoryBytes>>10)}
	}
	return nil
}

// InventoryBytes is what the ids of entries take in status.inventory, as JSON.
func InventoryBytes(entries []v1alpha1.ObjectRef) int {
	n := 0
	for _, e := range entries {
		n += len(e.ID()) + 3 // quotes and a comma
	}
	return n
}

// CheckPruneLimit refuses to prune more than spec.pruneLimit of the inventory at
// once; without an explicit limit, more than half. An empty render that the Sync
// allows (allowEmpty) may prune everything unless a limit is set explicitly.
func CheckPruneLimit(obj *v1alpha1.Sync, prune, inventory int, empty bool) error {
	limit := obj.Spec.PruneLimit
	if limit == nil {
		if empty && obj.Spec.AllowEmpty {
			return nil
		}
		def := intstr.FromString(v1alpha1.DefaultPruneLimit)
		limit = &def
	}
	max, err := intstr.GetScaledValueFromIntOrPercent(limit, inventory, false)
	if err != nil {
		return &HeldError{Reason: v1alpha1.ReasonPruneLimit, Msg: fmt.Sprintf("spec.pruneLimit %q: %v", limit.String(), err)}
	}
	if prune <= max {
		return nil
	}
	return &HeldError{Reason: v1alpha1.ReasonPruneLimit, Msg: fmt.Sprintf(
		"%d of %d objects left git, more than the prune limit of %s (%d); nothing was pruned. "+
			"If this is intended, set spec.pruneLimit (for example \"100%%\") and it will proceed",
		prune, inventory, limit.String(), max)}
}

// InventoryDetail returns every object a Sync's status lists as applied, with its
// sync, health and message: status.resources for those it details, Synced and
// Healthy for the rest (as status.summary counts them). A status written before
// status.inventory existed lists every object in resources.
func InventoryDetail(st v1alpha1.SyncStatus) []v1alpha1.ResourceStatus {
	detail := map[string]v1alpha1.ResourceStatus{}
	for _, r := range st.Resources {
		detail[r.Key()] = r
	}
	if len(st.Inventory) == 0 {
		return append([]v1alpha1.ResourceStatus(nil), st.Resources...)
	}
	out := make([]v1alpha1.ResourceStatus, 0, len(st.Inventory))
	for _, id := range st.Inventory {
		e, err := v1alpha1.ParseInventoryEntry(id)
		if err != nil {
			continue // not written by Tether; nothing can be pruned by it
		}
		r, ok := detail[e.Key()]
		if !ok {
			r = v1alpha1.ResourceStatus{Sync: v1alpha1.SyncStatusSynced, Health: v1alpha1.HealthHealthy}
		}
		r.ObjectRef = e
		out = append(out, r)
	}
	return out
}

// Inventory returns the objects a Sync's status lists as applied.
func Inventory(st v1alpha1.SyncStatus) []v1alpha1.ObjectRef {
	objects := InventoryDetail(st)
	refs := make([]v1alpha1.ObjectRef, len(objects))
	for i, o := range objects {
		refs[i] = o.ObjectRef
	}
	return refs
}

// LeftGit returns the objects of inventory that an apply's change set no longer
// holds: what a sync would prune. An object is the same across versions of its
// kind.
func LeftGit(inventory []v1alpha1.ObjectRef, cs *apply.ChangeSet) []v1alpha1.ObjectRef {
	desired := InGit(cs)
	var out []v1alpha1.ObjectRef
	for _, r := range inventory {
		if !desired[r.Key()] {
			out = append(out, r)
		}
	}
	return out
}

// InGit is the set of the keys (v1alpha1.ObjectRef.Key) of the objects an apply's
// change set holds: what the revision still declares.
func InGit(cs *apply.ChangeSet) map[string]bool {
	desired := map[string]bool{}
	for _, c := range cs.Changes {
		desired[c.Object.Key()] = true
	}
	return desired
}

// PruneHeld says why a sync would prune none of stale, the objects that left git
// out of an inventory of before objects: "" when it would prune them (each object
// may still be kept, see apply.Manager.Prune), else the reason, as the Sync's
// status says it.
func PruneHeld(s *v1alpha1.Sync, stale []v1alpha1.ObjectRef, before int, renderedEmpty bool) string {
	switch {
	case len(stale) == 0:
		return ""
	case !s.Spec.PruneEnabled():
		return "prune is off"
	case renderedEmpty && !s.Spec.AllowEmpty:
		return "the path renders no objects and spec.allowEmpty is false"
	}
	if err := CheckPruneLimit(s, len(stale), before, renderedEmpty); err != nil {
		return err.Error()
	}
	return ""
}
