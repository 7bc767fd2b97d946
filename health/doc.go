// Package health judges whether applied objects work, as pure functions of the
// objects themselves: no cluster access, no logging.
//
// Compute reads one object with kstatus (sigs.k8s.io/cli-utils), which understands
// the built-in workloads and any custom resource that follows the Ready/Reconciling/
// Stalled condition conventions, and maps its verdict onto Tether's health codes.
// Aggregate folds many verdicts into the one a Sync reports: the worst wins.
package health
