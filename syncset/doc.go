// Package syncset is the SyncSet controller: it reads what a SyncSet's git
// generators name from the repository, asks plan/fleet for the Syncs the
// generators and the template make, creates, updates and deletes the Syncs it
// owns to match, and writes the SyncSet's status. It sits beside sync on the
// floor above plan, and never applies anything itself: each Sync it makes is
// reconciled by sync like any other, as its own account.
//
// One reconcile is a straight line (reconciler.go):
//
//	read      the SyncSet and the Syncs it owns, from the manager's cache
//	git       for each git generator: source.Fetch (the listing the Syncs of the
//	          repository share), then source.Glob and source.ReadFiles
//	generate  fleet.Generate, fleet.Make per set (refusing power from parameters)
//	roll      with strategy.rollingSync: fleet.Roll decides each Sync's pin
//	          (tether.dev/pin-revision) or suspension (reconciler_rollout.go)
//	diff      fleet.Diff, with the deletion guard (generatedLimit, an empty listing)
//	write     create, update (a hand edit reverted), delete; then the status, once
//
// Errors map to behaviour in one place (Reconcile): a git failure is retried
// with backoff and the Syncs stay as they are; bad input (a file that does not
// parse, a template refused) stalls the SyncSet until it or git changes, with the
// Syncs as they are; a write the API server refuses names the generator entry.
// It requeues at the shortest interval of its git generators (and, rolling, of
// its Syncs' sources: a new revision reaches pinned Syncs only through it), and
// a Sync's readiness or revision changing queues its SyncSet (the rollout's next
// step). With rollback, a halted step's Syncs are pinned back to the commits
// they came from (tether.dev/rollout-from) and stay there while their ref names
// the revision they were rolled back from (tether.dev/rolled-back-from).
package syncset
