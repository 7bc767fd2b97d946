package apply

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
)

// Manager applies objects to one cluster. It is safe for concurrent use.
type Manager struct {
	client    client.Client
	mapper    meta.RESTMapper
	live      LiveVersions
	discovery discovery.ServerResourcesInterface
	verified  *verifiedCache
	scopes    *scopes // which kinds are namespaced, remembered across calls
	metadata  metadata.Interface
	raw       rest.Interface
}

// LiveVersions reports the resourceVersion of a live object as a watch cache last saw
// it, without a request to the API server. ok is false when the cache does not watch
// that kind (yet) or has not synced; the Manager then reads from the API server. An
// object the synced cache does not hold is reported as rv "" and ok true: absent, so
// the Manager does not read it (and checks the dry-run's answer instead, in case the
// cache lags).
type LiveVersions interface {
	ResourceVersion(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (rv string, ok bool)
}

// ManagerOptions configure a Manager for its lifetime.
type ManagerOptions struct {
	// LiveVersions, when set, lets the Manager skip the read and the dry-run of an
	// object whose desired state and live resourceVersion are both unchanged since
	// they were last verified to match: a converged resync then costs no requests.
	LiveVersions LiveVersions
	// VerifiedCacheBytes bounds the live objects kept for that (as JSON);
	// 0 means DefaultVerifiedCacheBytes.
	VerifiedCacheBytes int64
	// Discovery, when set, lets FindOwned enumerate the kinds the cluster serves.
	Discovery discovery.ServerResourcesInterface
	// Metadata, when set, is a metadata-only client acting as the same identity as
	// the Manager's client: the dry-run of an object that is not there asks through
	// it for the answer's metadata only.
	Metadata metadata.Interface
	// Raw, when set, is a client whose answers the Manager reads as bytes, acting as
	// the same identity as the Manager's client: a write keeps the JSON of its
	// answer as it came, less managedFields (liveJSON), instead of decoding it into
	// maps and encoding it again.
	Raw rest.Interface
}

// WithClientsFor returns opts with Metadata and Raw built from cfg, which must act
// as the same identity as the Manager's client.
func (opts ManagerOptions) WithClientsFor(cfg *rest.Config) (ManagerOptions, error) {
	var err error
	if opts.Metadata, err = metadata.NewForConfig(cfg); err != nil {
		return opts, fmt.Errorf("creating a metadata client: %w", err)
	}
	raw := rest.CopyConfig(cfg)
	raw.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	raw.ContentType, raw.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	if opts.Raw, err = rest.UnversionedRESTClientFor(raw); err != nil {
		return opts, fmt.Errorf("creating a client for raw answers: %w", err)
	}
	return opts, nil
}

// NewManager returns a Manager that reads and writes through c. c must read from the
// API server, not from a cache, because comparisons need the current live object.
func NewManager(c client.Client, opts ManagerOptions) *Manager {
	return &Manager{client: c, mapper: c.RESTMapper(), live: opts.LiveVersions, discovery: opts.Discovery,
		verified: newVerifiedCache(opts.VerifiedCacheBytes), scopes: newScopes(c.RESTMapper()), metadata: opts.Metadata, raw: opts.Raw}
}

// Options control one ApplyAll call.
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

// dryRunConcurrency is how many objects one stage compares at once.
func (o Options) dryRunConcurrency() int {
	if o.DryRunConcurrency > 0 {
		return o.DryRunConcurrency
	}
	return o.Concurrency
}

// RefOf returns the identity of obj.
func RefOf(obj *unstructured.Unstructured) v1alpha1.ObjectRef {
	return v1alpha1.NewObjectRef(obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName())
}

// Action is what applying an object did, or in a dry run would do.
type Action string

// Actions, as counted in tether_apply_objects_total.
const (
	ActionCreated    Action = "created"
	ActionConfigured Action = "configured"
	ActionUnchanged  Action = "unchanged"
	ActionFailed     Action = "failed"
	// ActionPruned: Prune sent the delete, or the object is already being deleted.
	ActionPruned Action = "pruned"
	// ActionOrphaned: Orphan removed Tether's marks and left the object in place.
	ActionOrphaned Action = "orphaned"
	// ActionSkipped: Prune or Orphan left the object alone, for the reason in Note
	// (already gone, owned by someone else, protected); it is no longer Tether's.
	ActionSkipped Action = "skipped"
	// ActionHeld: the object passed (or never reached) validation but was not
	// written, because other objects of the same revision failed theirs.
	ActionHeld Action = "held"
)

// Change is the outcome for one object.
type Change struct {
	Object v1alpha1.ObjectRef
	Action Action
	// Live is the object as the cluster holds it after the call: after the write, or
	// as it was when nothing was written (unchanged, or a dry run). Nil when it does
	// not exist or the call failed. It is kept as JSON (Object) and without its
	// managedFields: a change set holds one per object of a revision, and
	// managedFields, which ApplyAll read to compare, are often the larger part of
	// an object.
	Live *Object
	// Desired is, in a dry run (Options.DryRun), the server-side dry-run of the
	// apply of an object that differs or is missing: what the cluster would hold
	// once it is applied. An apply that writes keeps none: what it wrote is Live.
	// Without managedFields, as Live.
	Desired *unstructured.Unstructured
	// Diff lists the fields that differ between Live and Desired, as dotted paths
	// ("spec.replicas", "metadata.labels.app"), when Action is ActionConfigured.
	Diff []string
	// Ignored lists the fields of the object that were neither compared nor applied
	// (ignore rules, autoscaled replicas), and who they are left to.
	Ignored []IgnoredField
	// Reverted lists the fields that another manager had changed and that this
	// apply set back to git's value (ActionConfigured only).
	Reverted []RevertedField
	// TakenOver is true when the fields of client-side apply managers in the live
	// object were moved to Tether's field manager (Options.TakeOver).
	TakenOver bool
	// Recreated is true when an immutable field change was applied by deleting and
	// recreating the object, as its tether.dev/force annotation allows.
	Recreated bool
	// Note says why Prune or Orphan skipped the object, or that a pruned object is
	// still terminating.
	Note string
	// Err is set when Action is ActionFailed.
	Err error
}

// ChangeSet is the outcome of one ApplyAll, in the order objects were applied.
type ChangeSet struct {
	Changes []Change
	// DryRun is true when nothing was written: created and configured mean "would be".
	DryRun bool
}

// Count returns how many changes had action a.
func (cs *ChangeSet) Count(a Action) int {
	n := 0
	for _, c := range cs.Changes {
		if c.Action == a {
			n++
		}
	}
	return n
}

// Changed reports whether any object was written.
func (cs *ChangeSet) Changed() bool {
	return !cs.DryRun && cs.Count(ActionCreated)+cs.Count(ActionConfigured) > 0
}

// Differs reports whether any object differs from, or is missing in, the cluster
// (after a dry run), or failed.
func (cs *ChangeSet) Differs() bool {
	return cs.Count(ActionUnchanged) != len(cs.Changes)
}
