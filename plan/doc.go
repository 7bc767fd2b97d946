// Package plan holds the pure decisions about a Sync, between the controller (sync)
// and the packages that do the work (source, apply, health): what a Sync and the
// objects its revision renders to mean for an apply and a prune, the inventory and
// the guards on it (an empty render, a revision too large for the status, a prune
// over the limit), the status and conditions of a reconcile (Status), and the label
// a failure is counted under.
//
// It owns no I/O: no client, no informer, no clock, no logging. Every function
// takes what it decides on and returns the decision, so the agent (sync) and the
// CLI (`tether diff`) reach the same answer through the same code, and the package
// is tested with tables alone. It reads what apply and source are asked and
// answer through their contracts (apply/contract: the options and the ChangeSet;
// source/result: the Snapshot and the typed errors), never through apply or
// source themselves, so that nothing of a cluster client, go-git, Helm or
// kustomize is built into it: `go list -deps ./plan` holds api/v1alpha1, health
// and apimachinery, and none of those.
//
// Data flows one way: sync reads the Sync, fetches and renders a revision (source),
// asks plan what to apply (ForApply) and whether the revision may proceed
// (CheckEmpty, CheckSize), has apply do it, asks plan what left git and may be
// pruned (LeftGit, CheckPruneLimit, PruneOptionsFor), and writes the status that a
// Status built from what each step recorded. A
// refusal is a *HeldError carrying its reason from api/v1alpha1, which stalls the
// Sync until git or the Sync changes.
//
// Order (order.go, order_run.go, depends.go): OrderingOf reads an object's wave,
// hook phases and delete policies from its annotations (Tether's, Argo CD's, and
// Helm's hooks mapped), a pure function of the annotations alone so that a chart
// renderer reaches the same answer; Order splits a rendered revision into the
// inventory's objects, the hooks (copied and named for the run, HookName) and the
// steps sorted by phase, wave, kind and name; CheckDependencies decides whether a
// Sync may proceed given the Syncs it depends on (a cycle is a *HeldError, a
// dependency not Ready a *WaitingError).
//
// Status accumulates one reconcile's outcome on top of the previous status, so
// what the reconcile did not look at is carried over: each step records what it
// did (Fetched, Rendered, Applied, Pruned, Adopted, ObjectHealth and
// AggregateHealth, FieldConflicts) and how it ended (Ready, Stalled, Retrying,
// SourceFailed, Suspended, DeletionBlocked, WaitingForDeletion), and Build returns
// the status, the inventory compacted to fit (status_inventory.go). The clock is
// the one NewStatus is handed; sync writes what Build returns (merging the
// inventory with MergeInventory on a conflict), records Events and metrics.
//
// history.go keeps status.history (History: one entry per revision applied in
// full, with the health it reached) and decides automatic rollbacks from it
// (CheckRollback: the newest revision never reached Healthy and is Degraded or past
// spec.rollback.healthTimeout; LastHealthy is where it goes), and records pins and
// rollbacks in the Pinned and RolledBack conditions. sync fetches and applies the
// revision they name.
package plan
