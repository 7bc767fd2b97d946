package agent

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	tethersync "tether.dev/tether/sync"
	"tether.dev/tether/syncset"
)

// setupSyncSets adds the SyncSet controller, over the agent's own Source (so
// that a SyncSet's listing of a repository is the one its Syncs share), when
// the agent serves SyncSets and the cluster has their CRD; a cluster installed
// before SyncSets runs without them, and says so. Git generators' credentials
// are read by the Sync reconciler, as the Syncs the SyncSet makes would read
// them.
func setupSyncSets(mgr ctrl.Manager, src *source.Source, creds syncset.Credentials, o Options) error {
	var registry syncset.Registry
	if ns := o.clusterNamespace(); ns != "" {
		// The clusters generators list the registered clusters as the agent.
		registry = tethersync.Registry{Reader: mgr.GetAPIReader(), Namespace: ns}
	}
	if !o.SyncSets {
		// The shard's cache holds only its own Syncs: a SyncSet would not see the
		// Syncs it made. The unsharded agent serves SyncSets.
		ctrl.Log.WithName("setup").Info("SyncSets are served by the agent without --shard or with --shard \"\", not by this one")
		return nil
	}
	gk := schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "SyncSet"}
	if _, err := mgr.GetRESTMapper().RESTMapping(gk, v1alpha1.GroupVersion.Version); err != nil {
		if apimeta.IsNoMatchError(err) {
			ctrl.Log.WithName("setup").Info("the cluster has no SyncSet CRD: SyncSets are off (install deploy/base/crd to turn them on)")
			return nil
		}
		return err
	}
	opts := syncset.DefaultOptions()
	opts.Concurrency = max(1, o.Concurrency/2)
	opts.SkipNameValidation = o.Overrides.SkipNameValidation
	return (&syncset.Reconciler{Client: mgr.GetClient(), Source: src, Credentials: creds, Registry: registry}).SetupWithManager(mgr, opts)
}
