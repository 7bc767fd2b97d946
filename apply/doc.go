// Package apply makes the cluster hold a set of desired objects, with server-side
// apply under one field manager.
//
// For each stage of objects (Namespaces and CRDs first, then everything else) it
// reads the live object, runs a server-side apply dry-run (missing objects too), and
// compares the two: an object whose dry-run equals the live object is unchanged and
// is never written, so a converged cluster costs no writes. The dry-runs validate the
// whole stage before any of it is written: if one fails, nothing of that stage or a
// later one is written (ActionHeld, *ValidationError), so a bad manifest in git
// cannot half-apply a revision. Only the first stage, the Namespaces and CRDs that
// later objects need in order to be validated at all, may be written before a later
// stage fails, as in Flux's staged apply. Before a stage is written, the caller's
// Options.BeforeWrite records what is about to be written (the write-ahead
// inventory). FindOwned lists the objects that carry a label, to rebuild a lost
// inventory; Prune treats an object whose kind the API server no longer serves as
// gone.
//
// Field ownership (manager_ignore.go: the ignore policy; manager_owners.go: who
// owns a field; fieldpath.go: JSON pointers and field paths; manager_autoscale.go:
// autoscaled replicas; manager_fights.go: fields taken back; manager_takeover.go):
// Options.Ignore rules and autoscaled replicas name fields that are removed from
// both sides of the comparison and, when another manager owns them in the live
// managedFields, from the object sent; a field only Tether owns is sent with its
// live value instead, because releasing it would delete it. Objects made by
// client-side kubectl apply are taken over (their managers' managedFields entries
// moved to Tether's) before their first comparison. Change.Reverted names fields an
// apply took back from another manager, for the caller to detect fights.
//
// The package returns values, never logs: a ChangeSet saying what happened to each
// object (named by v1alpha1.ObjectRef, the identity every layer shares), and typed
// errors (*ObjectError) that name the object at fault. It does not know about Sync
// objects, git, health or status; the sync package decides what the
// results mean.
package apply
