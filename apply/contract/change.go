package contract

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
)

// Action is what applying an object did, or in a dry run would do.
type Action string

// Actions, as counted in tether_apply_objects_total.
const (
	ActionCreated    Action = "created"
	ActionConfigured Action = "configured"
	ActionUnchanged  Action = "unchanged"
	ActionFailed     Action = "failed"
	// ActionPruned: Prune sent the delete, or the object is already being deleted.
	ActionPruned Action = "pruned"
	// ActionOrphaned: Orphan removed Tether's marks and left the object in place.
	ActionOrphaned Action = "orphaned"
	// ActionSkipped: Prune or Orphan left the object alone, for the reason in Note
	// (already gone, owned by someone else, protected); it is no longer Tether's.
	ActionSkipped Action = "skipped"
	// ActionHeld: the object passed (or never reached) validation but was not
	// written, because other objects of the same revision failed theirs.
	ActionHeld Action = "held"
)

// Change is the outcome for one object.
type Change struct {
	Object v1alpha1.ObjectRef
	Action Action
	// Live is the object as the cluster holds it after the call: after the write, or
	// as it was when nothing was written (unchanged, or a dry run). Nil when it does
	// not exist or the call failed. It is kept as JSON (Object) and without its
	// managedFields: a change set holds one per object of a revision, and
	// managedFields, which ApplyAll read to compare, are often the larger part of
	// an object.
	Live *Object
	// Desired is, in a dry run (Options.DryRun), the server-side dry-run of the
	// apply of an object that differs or is missing: what the cluster would hold
	// once it is applied. An apply that writes keeps none: what it wrote is Live.
	// Without managedFields, as Live.
	Desired *unstructured.Unstructured
	// Diff lists the fields that differ between Live and Desired, as dotted paths
	// ("spec.replicas", "metadata.labels.app"), when Action is ActionConfigured.
	Diff []string
	// Ignored lists the fields of the object that were neither compared nor applied
	// (ignore rules, autoscaled replicas), and who they are left to.
	Ignored []IgnoredField
	// Reverted lists the fields that another manager had changed and that this
	// apply set back to git's value (ActionConfigured only).
	Reverted []RevertedField
	// TakenOver is true when the fields of client-side apply managers in the live
	// object were moved to Tether's field manager (Options.TakeOver).
	TakenOver bool
	// Recreated is true when an immutable field change was applied by deleting and
	// recreating the object, as its tether.dev/force annotation allows.
	Recreated bool
	// Note says why Prune or Orphan skipped the object, or that a pruned object is
	// still terminating.
	Note string
	// Err is set when Action is ActionFailed.
	Err error
}

// Notes on skipped objects (Change.Note), for status messages.
const (
	NoteGone        = "already deleted"
	NoteNotOwned    = "not applied by this Sync"
	NoteProtected   = "protected by " + v1alpha1.PruneAnnotation + ": disabled"
	NoteStillWants  = "still in git under another version"
	NoteTerminating = "terminating"
	// NoteKindGone: the API server no longer serves the object's kind (its CRD was
	// deleted, or an upgrade removed the API), so the object cannot exist.
	NoteKindGone = "its kind is no longer served by the API server"
	// NoteHeld: an object of a revision that failed validation, not written.
	NoteHeld = "not written: other objects of the revision failed validation"
	// NoteRefused: an object the API server refused at validation (its dry-run),
	// not written.
	NoteRefused = "refused at validation, not written"
	// NoteForbidden: the identity Tether acts as may not read the object, so it cannot
	// be the identity's to delete or release (an object whose apply was refused, or
	// one whose rights were withdrawn); it is left exactly as it is.
	NoteForbidden = "not readable by the account the Sync acts as; left alone"
	// NoteDryRun: a prune with PruneOptions.DryRun would delete the object.
	NoteDryRun = "would be deleted"
)

// ChangeSet is the outcome of one of apply's ApplyAll, in the order objects were applied.
type ChangeSet struct {
	Changes []Change
	// DryRun is true when nothing was written: created and configured mean "would be".
	DryRun bool
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
	return !cs.DryRun && cs.Count(ActionCreated)+cs.Count(ActionConfigured) > 0
}

// Differs reports whether any object differs from, or is missing in, the cluster
// (after a dry run), or failed.
func (cs *ChangeSet) Differs() bool {
	return cs.Count(ActionUnchanged) != len(cs.Changes)
}

// IgnoredField is a field of one object that Tether neither compared nor applied,
// because an ignore rule or an autoscaler leaves it to another owner.
type IgnoredField struct {
	// Path is the field as a dotted path: "spec.replicas",
	// `spec.template.spec.containers[name="app"].image`.
	Path string
	// Manager names the other field managers that own the field in the live object
	// and are left to set it. Empty when no one else owns it: Tether then keeps the
	// live value in its apply (adopts it), so that releasing the field does not make
	// the API server delete it.
	Manager string
}

// String writes "spec.replicas left to kube-controller-manager", the form status uses.
func (f IgnoredField) String() string {
	if f.Manager == "" {
		return f.Path + " kept at its live value"
	}
	return f.Path + " left to " + f.Manager
}

// RevertedField is a field another manager had changed, that an apply set back to
// git's value: one round of a possible fight over the field.
type RevertedField struct {
	// Pointer is the field as a JSON pointer ("/spec/replicas"), the form of an
	// ignore rule that would end the fight.
	Pointer string
	// Path is the field as a dotted path, for messages.
	Path string
	// Manager is the manager whose value was reverted.
	Manager string
}
