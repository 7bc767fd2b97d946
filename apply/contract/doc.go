// Package contract is what apply is asked and what it answers, with no client:
// the options of an apply, a prune and a search for owned objects (Options,
// PruneOptions, FindOptions), and the outcome for each object (Change, in a
// ChangeSet, with its Action, its live state as an Object, and the fields it
// left to others or took back). It also holds how an object is named
// (RefOf) and the form a comparison reads it in (Normalize).
//
// It sits below apply, which acts on these types against a cluster, and below
// plan, which decides them for a Sync and reads them back into status: plan
// imports it, never apply, so that the pure decisions carry none of a
// cluster client's dependencies. apply re-exports every name as an alias, so
// callers of apply need not know this package exists.
package contract
