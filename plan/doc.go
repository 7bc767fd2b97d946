// Package plan holds the pure decisions about a Sync, between the controller (sync)
// and the packages that do the work (source, apply, health): what a Sync and the
// objects its revision renders to mean for an apply and a prune, the inventory and
// the guards on it (an empty render, a revision too large for the status, a prune
// over the limit), and the label a failure is counted under.
//
// It owns no I/O: no client, no informer, no clock, no logging. Every function
// takes what it decides on and returns the decision, so the agent (sync) and the
// CLI (`tether diff`) reach the same answer through the same code, and the package
// is tested with tables alone.
//
// Data flows one way: sync reads the Sync, fetches and renders a revision (source),
// asks plan what to apply (ForApply) and whether the revision may proceed
// (CheckEmpty, CheckSize), has apply do it, asks plan what left git and may be
// pruned (LeftGit, CheckPruneLimit, PruneOptionsFor), and writes the status. A
// refusal is a *HeldError carrying its reason from api/v1alpha1, which stalls the
// Sync until git or the Sync changes.
//
// Not here yet: the status and conditions builder, still in sync
// (reconciler_status.go, status_inventory.go).
package plan
