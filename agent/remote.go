package agent

import (
	"context"
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"tether.dev/tether/apply"
	tethersync "tether.dev/tether/sync"
)

// clusters are the agent's remote clusters: each connected as connector builds
// it, the registered ones read from the agent's namespace.
func (a *Agent) clusters(mgr ctrl.Manager, home *rest.Config, o Options) (*tethersync.Clusters, error) {
	clusters := tethersync.NewClusters(tethersync.ClustersOptions{
		Connect:   a.connector(mgr, home, o),
		Namespace: o.clusterNamespace(),
		AllowExec: o.AllowKubeConfigExec,
		Tenancy:   o.tenancyOptions(),
	})
	// Started by the manager: the remote clusters' watches live within its run.
	return clusters, mgr.Add(clusters)
}

// connector connects a remote cluster as the agent's own: an apply client and
// applier over the cluster's own discovery and RESTMapper, the clients that
// impersonate a Sync's account there, and a cache of its own whose informers the
// drift watches use (a Watcher that queues into the agent's). The cluster's
// requests share the agent's --kube-api-qps and --kube-api-burst as one more
// client, and each cluster has its own limiter: a busy cluster does not slow
// another's.
func (a *Agent) connector(mgr ctrl.Manager, home *rest.Config, o Options) tethersync.ConnectFunc {
	return func(ctx context.Context, name string, cfg *rest.Config) (*tethersync.Remote, error) {
		cfg.QPS, cfg.Burst = home.QPS, home.Burst
		cfg.UserAgent = home.UserAgent
		httpClient, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, err
		}
		mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
		if err != nil {
			return nil, fmt.Errorf("mapping the kinds of cluster %s: %w", name, err)
		}
		scheme := mgr.GetScheme()
		c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme, Mapper: mapper, HTTPClient: httpClient})
		if err != nil {
			return nil, err
		}
		objects, err := cache.New(cfg, cache.Options{Scheme: scheme, Mapper: mapper, HTTPClient: httpClient, DefaultTransform: tethersync.CacheTransform})
		if err != nil {
			return nil, fmt.Errorf("caching cluster %s: %w", name, err)
		}
		watcher := a.Watcher.ForCache(objects)
		disco, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return nil, err
		}
		opts, err := apply.ManagerOptions{LiveVersions: watcher, Discovery: disco, VerifiedCacheBytes: o.VerifiedCacheBytes}.WithClientsFor(cfg)
		if err != nil {
			return nil, err
		}
		capabilities, err := tethersync.ClusterCapabilities(cfg)
		if err != nil {
			return nil, err
		}
		ctx, stop := context.WithCancel(ctx)
		go func() {
			if err := objects.Start(ctx); err != nil {
				ctrl.Log.WithName("clusters").Error(err, "watching a remote cluster", "cluster", name)
			}
		}()
		m := apply.NewManager(c, opts)
		return &tethersync.Remote{
			Agent:        tethersync.Identity{Applier: m, Finder: m, Pods: c},
			Impersonate:  impersonator(cfg, scheme, mapper, opts),
			Accounts:     c,
			Mapper:       mapper,
			Watcher:      watcher,
			Capabilities: capabilities,
			Stop:         stop,
		}, nil
	}
}
