package plan

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply/contract"
	"tether.dev/tether/source/result"
)

// MaxInventoryBytes bounds what status.objects takes: 640 KiB, about 50,000
// objects with names of ordinary length (CheckSize refuses more), so that a Sync's
// status stays under half of etcd's object limit by construction.
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
func CheckEmpty(obj *v1alpha1.Sync, snap *result.Snapshot) error {
	if len(snap.Objects) > 0 || obj.Spec.AllowEmpty {
		return nil
	}
	return &HeldError{Reason: v1alpha1.ReasonEmptyRender, Msg: fmt.Sprintf(
		"path %q renders no objects at %s; nothing was applied or pruned. Set spec.allowEmpty: true to prune everything this Sync applied",
		snap.Path, snap.Revision)}
}

// CheckSize refuses a revision with more objects than the inventory can hold,
// before anything of it is applied.
func CheckSize(obj *v1alpha1.Sync, snap *result.Snapshot) error {
	entries := make([]v1alpha1.ObjectRef, len(snap.Objects))
	for i, o := range snap.Objects {
		ns := o.GetNamespace()
		if ns == "" {
			ns = obj.Spec.Destination.Namespace
		}
		entries[i] = v1alpha1.NewObjectRef(o.GroupVersionKind(), ns, o.GetName())
	}
	if n := v1alpha1.InventoryBytes(v1alpha1.NewInventory(entries)); n > MaxInventoryBytes {
		return &HeldError{Reason: v1alpha1.ReasonRevisionTooLarge, Msg: fmt.Sprintf(
			"path %q renders %d objects at %s, whose inventory (%d KiB) would not fit in the Sync's status (at most %d KiB); "+
				"nothing was applied. Split the path into several Syncs", snap.Path, len(snap.Objects), snap.Revision, n>>10, MaxInventoryBytes>>10)}
	}
	return nil
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
// Healthy for the rest (as status.summary counts them).
func InventoryDetail(st v1alpha1.SyncStatus) []v1alpha1.ResourceStatus {
	refs := Inventory(st)
	detail := make(map[identity]v1alpha1.ResourceStatus, len(st.Resources))
	for _, r := range st.Resources {
		detail[identityOf(r.ObjectRef)] = r
	}
	out := make([]v1alpha1.ResourceStatus, len(refs))
	for i, ref := range refs {
		r, ok := detail[identityOf(ref)]
		if !ok {
			r = v1alpha1.ResourceStatus{Sync: v1alpha1.SyncStatusSynced, Health: v1alpha1.HealthHealthy}
		}
		r.ObjectRef = ref
		out[i] = r
	}
	return out
}

// Inventory returns the objects a Sync's status lists as applied: every reader of
// the inventory reads it here. It reads status.objects and, after an upgrade from
// an agent that wrote it, status.inventory (both when both are set: an object
// either names is tracked). A status written before either existed lists every
// object in status.resources; it has no status.summary, which every status
// written since has. With a summary, status.resources is detail only: the
// objects a refused revision shows there are in no inventory.
func Inventory(st v1alpha1.SyncStatus) []v1alpha1.ObjectRef {
	if len(st.Objects) == 0 && len(st.LegacyInventory) == 0 && st.Summary == nil {
		refs := make([]v1alpha1.ObjectRef, len(st.Resources))
		for i, r := range st.Resources {
			refs[i] = r.ObjectRef
		}
		return refs
	}
	return listed(st)
}

// listed is what status.objects and status.inventory name, each object once.
func listed(st v1alpha1.SyncStatus) []v1alpha1.ObjectRef {
	refs := v1alpha1.InventoryRefs(st.Objects)
	if len(st.LegacyInventory) == 0 {
		return refs
	}
	known := make(map[string]bool, len(refs))
	for _, r := range refs {
		known[r.Key()] = true
	}
	for _, id := range st.LegacyInventory {
		r, err := v1alpha1.ParseInventoryEntry(id)
		if err != nil || known[r.Key()] {
			continue // not written by Tether (nothing can be pruned by it), or listed already
		}
		known[r.Key()] = true
		refs = append(refs, r)
	}
	return refs
}

// SetInventory writes refs as st's inventory, in status.objects, and clears
// status.inventory, whose entries an upgraded agent has read into refs.
func SetInventory(st *v1alpha1.SyncStatus, refs []v1alpha1.ObjectRef) {
	st.Objects, st.LegacyInventory = v1alpha1.NewInventory(refs), nil
}

// LeftGit returns the objects of inventory that an apply's change set no longer
// holds: what a sync would prune. An object is the same across versions of its
// kind.
func LeftGit(inventory []v1alpha1.ObjectRef, cs *contract.ChangeSet) []v1alpha1.ObjectRef {
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
func InGit(cs *contract.ChangeSet) map[string]bool {
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

// identity is what Key says of an object, as a map key that costs no string of
// its own: its fields are the ObjectRef's.
type identity struct{ group, kind, namespace, name string }

func identityOf(r v1alpha1.ObjectRef) identity {
	return identity{r.Group, r.Kind, r.Namespace, r.Name}
}
