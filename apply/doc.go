// Package apply makes the cluster hold a set of desired objects, with server-side
// apply under one field manager.
//
// For each stage of objects (Namespaces and CRDs first, then everything else) it
// reads the live object, runs a server-side apply dry-run, and compares the two: an
// object whose dry-run equals the live object is unchanged and is never written, so
// a converged cluster costs no writes. If any dry-run in a stage fails, nothing of
// that stage is written: a bad manifest in git cannot half-apply a revision.
//
// The package returns values, never logs: a ChangeSet saying what happened to each
// object, and typed errors (*ObjectError) that name the object at fault. It does not
// know about Sync objects, git, health or status; the sync package decides what the
// results mean.
package apply
