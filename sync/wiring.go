package sync

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/apply"
)

// Parts are the collaborators of a Reconciler that one agent chooses and another
// may choose differently (a test counts the applier's requests, records Events
// in memory). What every agent wires the same way (its readers, the watch of
// credentials Secrets) NewReconciler wires itself, so that a test runs the
// configuration that ships.
type Parts struct {
	// What the Sync's revision is made of and how it reaches the cluster.

	// Source fetches and renders revisions.
	Source Source
	// Applier applies, prunes and orphans as the agent.
	Applier Applier
	// Finder, when set, rebuilds an empty inventory from the labelled objects
	// (usually the same apply.Manager as Applier).
	Finder Finder
	// ApplyOptions are the options of every apply; DefaultNamespace is set per Sync.
	ApplyOptions apply.Options

	// Who each Sync acts as: nil, the agent itself.
	Tenancy *Tenancy
	// Where a Sync's destination names another cluster: nil, nowhere but the
	// agent's own.
	Clusters *Clusters

	// What starts a reconcile.

	// Watcher watches the kinds each Sync applies (drift, health).
	Watcher *Watcher
	// Trigger queues the Syncs a push notification concerns.
	Trigger *Trigger

	// Who is told.

	// Recorder records the Sync's Events; nil records them as NewEventRecorder
	// does.
	Recorder record.EventRecorder
	// Home, when set, is an object in the agent's own namespace (its leader
	// election Lease) that the Events which must outlive a Sync's namespace are
	// recorded about; see Observers.Home.
	Home *corev1.ObjectReference
	// Metrics counts the work as it is done.
	Metrics *Metrics
}

// NewReconciler wires a Reconciler over mgr with parts, as `tether controller`
// runs it: Syncs are read from the manager's cache (Cluster.Syncs) and, on a status
// conflict, straight from the API server (Cluster.Fresh); the pods of a workload that is
// not healthy are read from a watch of their namespace while some workload there needs
// them (Cluster.PodWatch), never through the manager's cache; credentials Secrets are read
// through a client of their own that can watch, so that no Secret is cached and
// each one a Sync names is watched on its own, metadata only (Cluster.Secrets,
// Observers.SecretWatch). Call SetupWithManager to start it.
func NewReconciler(mgr ctrl.Manager, parts Parts) (*Reconciler, error) {
	// Straight to the API server, able to watch: Secrets and pods are never cached
	// by the manager.
	direct, err := client.NewWithWatch(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("creating the client for Secrets and pods: %w", err)
	}
	capabilities, err := ClusterCapabilities(mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	recorder := parts.Recorder
	var broadcaster record.EventBroadcaster
	if recorder == nil {
		if recorder, broadcaster, err = NewEventRecorder(mgr); err != nil {
			return nil, err
		}
	}
	r := &Reconciler{
		Cluster: Cluster{
			Syncs:    mgr.GetClient(),
			Fresh:    mgr.GetAPIReader(),
			Pods:     direct,
			PodWatch: NewPodWatch(DefaultPodWatchOptions()),
			Secrets:  direct,
		},
		Agent: Agent{
			Source:       parts.Source,
			Applier:      parts.Applier,
			Finder:       parts.Finder,
			Tenancy:      parts.Tenancy,
			Clusters:     parts.Clusters,
			ApplyOptions: parts.ApplyOptions,
			Capabilities: capabilities,
		},
		Observers: Observers{
			Recorder:    recorder,
			Home:        parts.Home,
			Metrics:     parts.Metrics,
			Watcher:     parts.Watcher,
			Trigger:     parts.Trigger,
			SecretWatch: NewSecretWatch(),
		},
	}
	r.state.events = broadcaster
	return r, nil
}

// forget drops all the Reconciler and its collaborators hold for a Sync that is
// gone: its metrics, fights, inventory searches, last good revision, request
// spacing, Secret watches, decrypted renders and object watches.
func (r *Reconciler) forget(ctx context.Context, key types.NamespacedName) {
	r.Observers.Metrics.Forget(key.Namespace, key.Name)
	r.state.fights.forget(key)
	r.state.searched.Delete(key)
	r.state.good.forget(key)
	r.state.requests.forget(key)
	r.state.rollbacks.Delete(key)
	r.state.runs.Delete(key)
	r.state.trusted.Delete(key)
	r.state.refused.forget(key)
	r.Observers.SecretWatch.Forget(key)
	r.keysInUse(key, "")
	if r.Observers.Watcher != nil {
		r.Observers.Watcher.Forget(ctx, key)
	}
	r.Agent.Clusters.Leave(ctx, key)
}
