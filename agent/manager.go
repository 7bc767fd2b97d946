package agent

import (
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	tethersync "tether.dev/tether/sync"
)

// NewScheme returns the types the agent reads and writes typed: Kubernetes' own
// and Tether's. Everything a Sync applies is read and written unstructured.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, nil
}

// ManagerOptions returns the manager's options as the agent ships them: its
// scheme (NewScheme) and its cache (CacheOptions). Its listeners (metrics,
// probes, profiles) and leader election are the caller's to add: `tether
// controller` sets them from its flags, a test turns the listeners off.
func ManagerOptions(o Options) (ctrl.Options, error) {
	scheme, err := NewScheme()
	if err != nil {
		return ctrl.Options{}, err
	}
	return ctrl.Options{Scheme: scheme, Cache: CacheOptions(o)}, nil
}

// CacheOptions confines the manager's cache, and with it the Syncs reconciled
// and the drift watches, to o.WatchNamespaces (none means the whole cluster),
// and its Syncs to those o.SyncSelector selects (the agent's shard). What the
// cache keeps of each object is trimmed to what the agent reads
// (tethersync.CacheTransform).
func CacheOptions(o Options) cache.Options {
	opts := cache.Options{DefaultTransform: tethersync.CacheTransform}
	if o.SyncSelector != nil {
		opts.ByObject = map[client.Object]cache.ByObject{&v1alpha1.Sync{}: {Label: o.SyncSelector}}
	}
	if len(o.WatchNamespaces) == 0 {
		return opts
	}
	opts.DefaultNamespaces = map[string]cache.Config{}
	for _, ns := range o.WatchNamespaces {
		opts.DefaultNamespaces[ns] = cache.Config{}
	}
	return opts
}

// LastGoodDir is where an agent with cacheDir keeps the revision each Sync last
// applied in full: beside the git cache (source keeps to its git/
// subdirectory), so that the volume that keeps one across restarts keeps both.
func LastGoodDir(cacheDir string) string {
	return filepath.Join(cacheDir, "last-good")
}
