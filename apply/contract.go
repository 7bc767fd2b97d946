package apply

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply/contract"
)

// The types of apply's contract (package contract, which plan reads without
// importing apply), under the names its callers know.
type (
	// Options control one ApplyAll call.
	Options = contract.Options
	// PruneOptions control Prune and Orphan.
	PruneOptions = contract.PruneOptions
	// FindOptions select the objects FindOwned returns.
	FindOptions = contract.FindOptions
	// Action is what applying an object did, or in a dry run would do.
	Action = contract.Action
	// Change is the outcome for one object.
	Change = contract.Change
	// ChangeSet is the outcome of one ApplyAll, in the order objects were applied.
	ChangeSet = contract.ChangeSet
	// IgnoredField is a field of one object that Tether neither compared nor applied.
	IgnoredField = contract.IgnoredField
	// RevertedField is a field another manager had changed, that an apply set back.
	RevertedField = contract.RevertedField
	// Object is a live object as a Change holds it: its JSON, without managedFields.
	Object = contract.Object
)

// Actions, as counted in tether_apply_objects_total (contract.Action*).
const (
	ActionCreated    = contract.ActionCreated
	ActionConfigured = contract.ActionConfigured
	ActionUnchanged  = contract.ActionUnchanged
	ActionFailed     = contract.ActionFailed
	ActionPruned     = contract.ActionPruned
	ActionOrphaned   = contract.ActionOrphaned
	ActionSkipped    = contract.ActionSkipped
	ActionHeld       = contract.ActionHeld
)

// RefOf returns the identity of obj.
func RefOf(obj *unstructured.Unstructured) v1alpha1.ObjectRef { return contract.RefOf(obj) }

// Normalize returns a copy of obj without the fields Compare ignores; it is also the
// form `tether diff` prints.
func Normalize(obj *unstructured.Unstructured) *unstructured.Unstructured {
	return contract.Normalize(obj)
}

// NewObject returns obj as an Object, without its managedFields.
func NewObject(obj *unstructured.Unstructured) (*Object, error) { return contract.NewObject(obj) }

// dryRunConcurrency is how many objects one stage compares at once.
func dryRunConcurrency(o Options) int {
	if o.DryRunConcurrency > 0 {
		return o.DryRunConcurrency
	}
	return o.Concurrency
}

// DefaultOptions returns the options Tether runs with (contract.DefaultOptions).
func DefaultOptions() Options { return contract.DefaultOptions() }

// DefaultTakeOver lists the field managers of client-side apply that Tether takes
// over on first sync (contract.DefaultTakeOver).
func DefaultTakeOver() []string { return contract.DefaultTakeOver() }

// Notes on skipped objects, for status messages (contract.Note*).
const (
	NoteGone        = contract.NoteGone
	NoteNotOwned    = contract.NoteNotOwned
	NoteProtected   = contract.NoteProtected
	NoteStillWants  = contract.NoteStillWants
	NoteTerminating = contract.NoteTerminating
	NoteKindGone    = contract.NoteKindGone
	NoteHeld        = contract.NoteHeld
	NoteRefused     = contract.NoteRefused
	NoteForbidden   = contract.NoteForbidden
	NoteDryRun      = contract.NoteDryRun
)
