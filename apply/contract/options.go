package contract

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	"tether.dev/tether/api/v1alpha1"
)

// Options control one call of apply's ApplyAll.
type Options struct {
	// FieldManager owns the applied fields; it must be stable across versions of
	// Tether, or field ownership is lost on upgrade.
	FieldManager string
	// DefaultNamespace is given to namespaced objects that name no namespace.
	DefaultNamespace string
	// Concurrency is how many objects are applied (written) at once.
	Concurrency int
	// DryRunConcurrency is how many objects are compared with the cluster (read
	// and dry-run) at once, when a revision is validated before any write; 0 means
	// Concurrency. A dry-run writes nothing to etcd, so the API server answers more
	// of them at once than it answers writes, and the validation gate costs the
	// first sync less time than its writes.
	DryRunConcurrency int
	// DryRun plans without writing: every object is compared with the cluster and
	// the ChangeSet says what would change, but nothing is created or configured.
	DryRun bool
	// Ignore lists fields that are neither compared nor applied (a Sync's
	// spec.ignoreDifferences): an ignored field never makes an object differ, and
	// Tether never reverts it. Git's value is still sent when an object is created.
	Ignore []v1alpha1.IgnoreRule
	// IgnoreScaledReplicas leaves spec.replicas to an autoscaler: it is ignored in
	// objects that a HorizontalPodAutoscaler targets, or whose replicas another
	// manager set through the scale subresource.
	IgnoreScaledReplicas bool
	// IgnoreFields adds JSON pointers to ignore in single objects, on top of Ignore.
	IgnoreFields map[v1alpha1.ObjectRef][]string
	// TakeOver lists the field managers of client-side apply whose fields Tether
	// takes over on first sync (DefaultTakeOver), so that a field later removed from
	// git is removed from the cluster.
	TakeOver []string
	// NeverTakeOver lists managers that are never taken over, even when TakeOver
	// names them: break-glass edits that must survive (an operator flag).
	NeverTakeOver []string
	// Release lets go of each object of objs once the apply is done with it
	// (written, or found unchanged): ApplyAll empties it (sets its Object to nil),
	// for a caller that reads none of objs after the call (the ChangeSet names
	// each object and keeps its live state). A revision is then not held whole,
	// decoded, until its last write: on a first sync of 1,000 objects that was
	// about a tenth of the agent's peak memory.
	Release bool
	// BeforeWrite, when set, is called once per stage after every object of the
	// stage passed its dry-run and before any is written, with the objects about to
	// be created or configured: the caller records them (the write-ahead inventory)
	// so that a crash in the middle of the writes loses track of nothing. An error
	// aborts the stage: nothing of it is written and its objects are ActionHeld.
	BeforeWrite func(ctx context.Context, writes []v1alpha1.ObjectRef) error
}

// DefaultOptions returns the options Tether runs with.
func DefaultOptions() Options {
	return Options{FieldManager: "tether", Concurrency: 16, DryRunConcurrency: 32, IgnoreScaledReplicas: true, TakeOver: DefaultTakeOver()}
}

// DefaultTakeOver are the field managers of client-side apply: kubectl apply
// (kubectl-client-side-apply, and kubectl in old versions) and objects that
// predate managedFields (before-first-apply).
func DefaultTakeOver() []string {
	return []string{"kubectl-client-side-apply", "kubectl", "before-first-apply"}
}

// PruneOptions control apply's Prune and Orphan.
type PruneOptions struct {
	// Owner is the tether.dev/owned-by value of the objects the caller applied. An
	// object that carries any other value (or none) is never deleted or released.
	Owner string
	// Keep holds the UIDs of objects still desired. An inventory entry that reads
	// back as one of them is the same object under another version or group
	// (extensions/v1beta1 → apps/v1), not something that left git.
	Keep map[types.UID]bool
	// FieldManager is the manager whose managedFields entry Orphan removes.
	FieldManager string
	// Concurrency is how many objects of one rank of the deletion order are
	// deleted or released at once; less than 1 means one at a time.
	Concurrency int
	// DryRun decides without deleting: every object is read and judged as Prune
	// would, and those it would delete come back as ActionPruned with NoteDryRun,
	// still in the cluster. (`tether diff` shows them.)
	DryRun bool
}

// FindOptions select the objects apply's FindOwned returns.
type FindOptions struct {
	// Label and Value: only objects carrying this label with this value are listed.
	Label, Value string
	// Owner: of those, only objects whose tether.dev/owned-by annotation is Owner
	// are returned; a label alone (copied by hand, or left by an orphaning) does
	// not make an object the caller's.
	Owner string
	// Namespace, when set, confines the search to namespaced kinds in that namespace:
	// for an identity whose rights end at a namespace, a cluster-wide list is refused.
	Namespace string
}
