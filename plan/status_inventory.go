package plan

import (
	"slices"
	"sort"
	"strings"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply/contract"
)

// The inventory is every object Tether applied for a Sync. It lives in the Sync's
// status, so a restarted agent prunes exactly what its predecessor applied, in a
// compact form that fits tens of thousands of objects (status.objects: each object
// its name, within a group per kind and namespace), with per-object detail only where there is something to say (status.resources) and
// counts of the rest (status.summary). Entries are identified by group, kind,
// namespace and name (not version).

// Bounds that keep a Sync's status under 768 KiB, half of etcd's object limit (1.5
// MiB), by construction: at most 640 KiB of inventory (about 50,000 objects with
// names of ordinary length; CheckSize refuses more), at most maxDetails detailed objects
// with messages of at most maxDetailMessage bytes (about 66 KiB), and conditions of
// at most maxMessage bytes each.
const (
	maxDetails       = 100
	maxDetailMessage = 512
)

// Inventory returns the objects this reconcile works on, loaded from the previous
// status the first time it is asked.
func (b *Status) Inventory() []v1alpha1.ResourceStatus {
	if b.objects == nil {
		b.objects = InventoryDetail(b.status)
	}
	return b.objects
}

// InventoryDiff is what an apply found of the previous inventory.
type InventoryDiff struct {
	// Stale are the entries git no longer declares: candidates for pruning. They
	// stay in the inventory, out of sync, until they are pruned.
	Stale []v1alpha1.ObjectRef
	// Before is the size of the inventory before the apply, which prune limits
	// are relative to.
	Before int
}

// Applied records an apply's change set in the inventory and returns the diff
// against the previous one.
func (b *Status) Applied(cs *contract.ChangeSet) InventoryDiff {
	if cs == nil {
		return InventoryDiff{}
	}
	previous := b.Inventory()
	diff := InventoryDiff{Before: len(previous)}
	objects := make([]v1alpha1.ResourceStatus, 0, len(cs.Changes))
	for _, c := range cs.Changes {
		objects = append(objects, resourceOf(c, cs.DryRun))
	}
	known := make(map[string]bool, len(previous))
	for _, old := range previous {
		known[old.Key()] = true
	}
	b.unwritten = nil
	for _, c := range cs.Changes {
		if unwritten(c) && !known[c.Object.Key()] {
			if b.unwritten == nil {
				b.unwritten = map[string]bool{}
			}
			b.unwritten[c.Object.Key()] = true
		}
	}
	desired := InGit(cs) // as plan.LeftGit, which `tether diff` uses
	for _, old := range previous {
		if desired[old.Key()] {
			continue
		}
		old.Sync, old.Health, old.Message = v1alpha1.SyncStatusOutOfSync, "", notInGit
		objects = append(objects, old)
		diff.Stale = append(diff.Stale, old.ObjectRef)
	}
	b.setObjects(objects)
	return diff
}

// unwritten says whether an apply never wrote c's object: held back, or
// refused at validation.
func unwritten(c contract.Change) bool {
	return c.Action == contract.ActionHeld || (c.Action == contract.ActionFailed && c.Note == contract.NoteRefused)
}

// resourceOf is the inventory entry of one object an apply looked at.
func resourceOf(c contract.Change, dryRun bool) v1alpha1.ResourceStatus {
	rs := v1alpha1.ResourceStatus{ObjectRef: c.Object, Sync: v1alpha1.SyncStatusSynced}
	switch {
	case c.Action == contract.ActionFailed:
		rs.Sync, rs.Message = v1alpha1.SyncStatusOutOfSync, c.Err.Error()
	case c.Action == contract.ActionHeld && len(c.Diff) > 0:
		rs.Sync, rs.Message = v1alpha1.SyncStatusOutOfSync, "differs from git in "+strings.Join(c.Diff, ", ")+"; "+c.Note
	case c.Action == contract.ActionHeld:
		rs.Sync, rs.Message = v1alpha1.SyncStatusOutOfSync, c.Note
	case dryRun && c.Action == contract.ActionCreated:
		rs.Sync, rs.Message = v1alpha1.SyncStatusOutOfSync, "missing from the cluster; selfHeal is off"
	case dryRun && c.Action == contract.ActionConfigured:
		rs.Sync, rs.Message = v1alpha1.SyncStatusOutOfSync, "differs from git in "+strings.Join(c.Diff, ", ")+"; selfHeal is off"
	}
	rs.Message = joinNote(rs.Message, leftToOthers(c.Ignored))
	return rs
}

// leftToOthers says which ignored fields of an object are left to another manager
// ("spec.replicas left to kube-controller-manager"), or "".
func leftToOthers(fields []contract.IgnoredField) string {
	var notes []string
	for _, f := range fields {
		if f.Manager != "" {
			notes = append(notes, f.String())
		}
	}
	return strings.Join(notes, ", ")
}

func joinNote(msg, note string) string {
	switch {
	case note == "":
		return msg
	case msg == "":
		return note
	}
	return msg + "; " + note
}

// notInGit is the message of inventory entries that left git, before a note says
// what became of them.
const notInGit = "not in git any more"

// LeftGitNote says, on every entry that left git, why it is still there.
func (b *Status) LeftGitNote(note string) {
	for i := range b.objects {
		if r := &b.objects[i]; r.Message == notInGit {
			r.Message = notInGit + "; " + note
		}
	}
}

// Pruned drops what a prune deleted or found not to be Tether's from the inventory,
// and keeps what it failed to delete, with the error, to retry.
func (b *Status) Pruned(cs *contract.ChangeSet) { b.recordPrune(cs, false) }

// Deleting records a prune as Pruned does, except that deleted objects stay
// listed ("deleting") until a later pass finds them gone: a Sync being deleted
// waits for them.
func (b *Status) Deleting(cs *contract.ChangeSet) { b.recordPrune(cs, true) }

func (b *Status) recordPrune(cs *contract.ChangeSet, untilGone bool) {
	if cs == nil {
		return
	}
	outcome := map[string]contract.Change{}
	for _, c := range cs.Changes {
		outcome[c.Object.Key()] = c
	}
	var kept []v1alpha1.ResourceStatus
	for _, r := range b.Inventory() {
		c, ok := outcome[r.Key()]
		switch {
		case !ok:
		case c.Action == contract.ActionFailed:
			r.Message = notInGit + "; prune failed: " + c.Err.Error()
		case c.Action == contract.ActionPruned && untilGone:
			r.Message = "deleting"
			if c.Note != "" {
				r.Message += " (" + c.Note + ")"
			}
		default:
			continue
		}
		kept = append(kept, r)
	}
	b.setObjects(kept)
}

// Adopted adds objects found in the cluster (a rebuilt inventory) to the inventory.
func (b *Status) Adopted(refs []v1alpha1.ObjectRef) {
	objects := b.Inventory()
	known := map[string]bool{}
	for _, r := range objects {
		known[r.Key()] = true
	}
	for _, ref := range refs {
		r := v1alpha1.ResourceStatus{ObjectRef: ref, Sync: v1alpha1.SyncStatusSynced}
		if !known[r.Key()] {
			objects = append(objects, r)
		}
	}
	b.setObjects(objects)
}

// setObjects sets the inventory, sorted for a stable status, and the sync status
// it implies.
func (b *Status) setObjects(objects []v1alpha1.ResourceStatus) {
	if objects == nil {
		objects = []v1alpha1.ResourceStatus{}
	}
	slices.SortFunc(objects, func(a, b v1alpha1.ResourceStatus) int { return a.CompareKey(b.ObjectRef) })
	b.objects = objects
	b.status.Sync = v1alpha1.SyncStatusSynced
	for _, r := range objects {
		if r.Sync != v1alpha1.SyncStatusSynced {
			b.status.Sync = v1alpha1.SyncStatusOutOfSync
		}
	}
}

// compact writes the inventory this reconcile built into the status: every object
// in status.objects, the objects with something to say in detail (the worst first,
// bounded), and counts.
func (b *Status) compact() {
	refs := make([]v1alpha1.ObjectRef, 0, len(b.objects))
	sum := &v1alpha1.ResourceSummary{Total: int32(len(b.objects))}
	var detailed []v1alpha1.ResourceStatus
	for _, r := range b.objects {
		if !b.unwritten[r.Key()] {
			refs = append(refs, r.ObjectRef)
		}
		count(sum, r)
		if detailRank(r) < noDetail {
			if len(r.Message) > maxDetailMessage {
				r.Message = r.Message[:maxDetailMessage-3] + "..."
			}
			detailed = append(detailed, r)
		}
	}
	sort.SliceStable(detailed, func(i, j int) bool { return detailRank(detailed[i]) < detailRank(detailed[j]) })
	b.status.ResourcesOmitted = 0
	if len(detailed) > maxDetails {
		b.status.ResourcesOmitted = int32(len(detailed) - maxDetails)
		detailed = detailed[:maxDetails]
	}
	slices.SortFunc(detailed, func(a, b v1alpha1.ResourceStatus) int { return a.CompareKey(b.ObjectRef) })
	SetInventory(&b.status, refs)
	b.status.Resources, b.status.Summary = detailed, sum
	if len(b.objects) == 0 {
		b.status.Resources = nil
	}
}

// noDetail is the rank of objects that are Synced and Healthy with nothing to say.
const noDetail = 5

// detailRank orders objects for status.resources: out of sync or failed first,
// then degraded, unknown or missing, then still rolling out, then healthy ones
// with a note.
func detailRank(r v1alpha1.ResourceStatus) int {
	switch {
	case r.Sync != v1alpha1.SyncStatusSynced:
		return 0
	case r.Health == v1alpha1.HealthDegraded:
		return 1
	case r.Health == v1alpha1.HealthMissing || r.Health == v1alpha1.HealthUnknown:
		return 2
	case r.Health == v1alpha1.HealthProgressing || r.Health == v1alpha1.HealthSuspended:
		return 3
	case r.Message != "":
		return 4
	}
	return noDetail
}

func count(sum *v1alpha1.ResourceSummary, r v1alpha1.ResourceStatus) {
	if r.Sync != v1alpha1.SyncStatusSynced {
		sum.OutOfSync++
	}
	switch r.Health {
	case v1alpha1.HealthProgressing:
		sum.Progressing++
	case v1alpha1.HealthDegraded:
		sum.Degraded++
	case v1alpha1.HealthSuspended:
		sum.Suspended++
	case v1alpha1.HealthMissing:
		sum.Missing++
	case v1alpha1.HealthUnknown:
		sum.Unknown++
	}
}

// MergeInventory is the inventory to write when this reconcile's status (ours)
// meets a conflict with one another writer wrote (theirs) since base was read:
// ours, plus the objects they added. With nothing added it is ours as it was.
func MergeInventory(base, ours, theirs v1alpha1.SyncStatus) []v1alpha1.InventoryGroup {
	if len(ours.LegacyInventory) == 0 && sameInventory(base, theirs) {
		return ours.Objects // theirs lists nothing base did not (the usual case: no other writer)
	}
	had := map[string]bool{}
	for _, st := range []v1alpha1.SyncStatus{base, ours} {
		for _, r := range listed(st) {
			had[r.ID()] = true
		}
	}
	var added []v1alpha1.ObjectRef
	for _, r := range listed(theirs) {
		if !had[r.ID()] {
			added = append(added, r)
		}
	}
	if len(added) == 0 && len(ours.LegacyInventory) == 0 {
		return ours.Objects
	}
	return v1alpha1.NewInventory(append(listed(ours), added...))
}

// sameInventory reports whether a and b list the same objects the same way.
func sameInventory(a, b v1alpha1.SyncStatus) bool {
	return slices.Equal(a.LegacyInventory, b.LegacyInventory) &&
		slices.EqualFunc(a.Objects, b.Objects, func(x, y v1alpha1.InventoryGroup) bool {
			return x.Group == y.Group && x.Version == y.Version && x.Kind == y.Kind && x.Namespace == y.Namespace && slices.Equal(x.Names, y.Names)
		})
}
