package main

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/syncset"
)

// setupSyncSets adds the SyncSet controller, over the agent's own Source (so
// that a SyncSet's listing of a repository is the one its Syncs share), when
// the cluster has the SyncSet CRD; a cluster installed before SyncSets runs
// without them, and says so.
func setupSyncSets(mgr ctrl.Manager, src *source.Source, concurrency int) error {
	gk := schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "SyncSet"}
	if _, err := mgr.GetRESTMapper().RESTMapping(gk, v1alpha1.GroupVersion.Version); err != nil {
		if apimeta.IsNoMatchError(err) {
			ctrl.Log.WithName("setup").Info("the cluster has no SyncSet CRD: SyncSets are off (install deploy/base/crd to turn them on)")
			return nil
		}
		return err
	}
	opts := syncset.DefaultOptions()
	opts.Concurrency = max(1, concurrency/2)
	return (&syncset.Reconciler{Client: mgr.GetClient(), Source: src}).SetupWithManager(mgr, opts)
}
