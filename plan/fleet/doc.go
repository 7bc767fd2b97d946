// Package fleet holds the pure decisions about a SyncSet: the parameter sets its
// generators yield, the Sync its template makes of each, what changes between the
// Syncs it has and those it should have (and whether the deletions may go), and
// where a rolling sync stands.
//
// It owns no I/O: no client, no git, no clock. The controller (package syncset)
// reads what the git generators name from the repository (Listing: the
// directories the include globs match, the files and their bytes) and hands it
// in; everything after that is a function of its arguments, tested by tables.
//
// Data flows one way:
//
//	Generate(spec, listings)       → []Set          one parameter set per Sync
//	Make(syncSet, set)             → *v1alpha1.Sync  the template filled in
//	Diff(desired, live, limit)     → Changes        create, update, delete, held
//	Roll(steps, members)           → Rollout        per Sync: pin, suspend or go
//
// Substitution is deliberately small (template.go): {{name}} and a pipe into one
// of lower, upper or normalize; nothing loops, nothing calls out, and a value is
// bounded in size, so no repository can make a template cost more than its
// bytes. The fields that decide what a Sync may do (ServiceAccountName and
// a dependency's namespace) take no placeholder at all: a template that puts one
// there is refused (ParameterRefused) naming the generator entry, and every Sync
// is made in the SyncSet's own namespace, so a parameter read from git, which
// anyone with push access writes, can never widen what a Sync may do.
package fleet
