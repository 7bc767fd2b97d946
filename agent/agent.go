package agent

import (
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"tether.dev/tether/apply"
	"tether.dev/tether/source"
	tethersync "tether.dev/tether/sync"
)

// Agent is what New built and registered with the manager: the parts a caller
// hands on (the Trigger to the push webhook receiver) or a test looks into.
type Agent struct {
	// Reconciler reconciles Syncs; SetupWithManager has been called.
	Reconciler *tethersync.Reconciler
	// Source fetches and renders revisions, for the Syncs and the SyncSets.
	Source *source.Source
	// Watcher watches the kinds each Sync applies.
	Watcher *tethersync.Watcher
	// Trigger queues the Syncs a push concerns; its OnPush is the webhook
	// receiver's callback.
	Trigger *tethersync.Trigger
	// Metrics counts the reconciles' work.
	Metrics *tethersync.Metrics
	// Applier is the agent's own applier (the Syncs that name no account),
	// before Overrides.Applier wraps it.
	Applier *apply.Manager
}

// New builds the agent over mgr, as `tether controller` runs it, and registers
// its controllers and the Sync state collector with mgr; the caller starts mgr.
// mgr's client reads Syncs from its cache, as ManagerOptions makes it. cfg is the
// agent's own identity for its applies, their discovery and the clients that
// impersonate a Sync's account; the manager's config (mgr.GetConfig()) reads
// Syncs, Secrets and pods.
func New(mgr ctrl.Manager, cfg *rest.Config, o Options) (*Agent, error) {
	src, err := source.New(o.sourceOptions())
	if err != nil {
		return nil, err
	}
	a := &Agent{Source: src}
	a.Watcher = tethersync.NewWatcher(mgr.GetCache(), o.watcherOptions())
	a.Trigger = tethersync.NewTrigger(mgr.GetClient(), mgr.GetCache(), src, mgr.Elected())
	if a.Metrics, err = addMetrics(mgr, o); err != nil {
		return nil, err
	}
	managerOpts, err := a.applierOptions(cfg, o)
	if err != nil {
		return nil, err
	}
	// Applies read live objects straight from the API server: the manager's cache
	// would start an informer for every kind Tether ever applies.
	applyClient, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("creating apply client: %w", err)
	}
	a.Applier = apply.NewManager(applyClient, managerOpts)
	var applier tethersync.Applier = a.Applier
	if o.Overrides.Applier != nil {
		applier = o.Overrides.Applier(applier)
	}
	clusters, err := a.clusters(mgr, cfg, o)
	if err != nil {
		return nil, err
	}
	tenancy := o.tenancyOptions()
	tenancy.Impersonate = impersonator(cfg, mgr.GetScheme(), mgr.GetRESTMapper(), managerOpts)
	tenancy.Accounts, tenancy.Mapper = mgr.GetAPIReader(), mgr.GetRESTMapper()
	a.Reconciler, err = tethersync.NewReconciler(mgr, tethersync.Parts{
		Source:       src,
		Applier:      applier,
		Finder:       a.Applier,
		ApplyOptions: o.applyOptions(),
		Tenancy:      tethersync.NewTenancy(tenancy),
		Clusters:     clusters,
		Watcher:      a.Watcher,
		Trigger:      a.Trigger,
		Recorder:     o.Overrides.Recorder,
		Metrics:      a.Metrics,
		Home:         o.Home,
	})
	if err != nil {
		return nil, err
	}
	if err := setupSyncSets(mgr, src, a.Reconciler, o); err != nil {
		return nil, err
	}
	if err := a.Reconciler.SetupWithManager(mgr, o.syncOptions()); err != nil {
		return nil, err
	}
	return a, nil
}

// applierOptions are the options of the agent's apply.Manager: the Watcher's
// informers tell the live versions, discovery the kinds, and each identity's
// cache of verified objects is bounded by o.VerifiedCacheBytes.
func (a *Agent) applierOptions(cfg *rest.Config, o Options) (apply.ManagerOptions, error) {
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return apply.ManagerOptions{}, fmt.Errorf("creating discovery client: %w", err)
	}
	return apply.ManagerOptions{LiveVersions: a.Watcher, Discovery: disco, VerifiedCacheBytes: o.VerifiedCacheBytes}.WithClientsFor(cfg)
}

// addMetrics registers Tether's metrics with the registry (controller-runtime's,
// served at /metrics on every replica, unless overridden), and the collector of
// the Syncs' state, which runs on every replica too.
func addMetrics(mgr ctrl.Manager, o Options) (*tethersync.Metrics, error) {
	reg := o.Overrides.Registry
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	metrics := tethersync.NewMetrics(reg, o.metricsOptions())
	state := tethersync.NewStateCollector(mgr.GetCache(), metrics, mgr.Elected(), o.LeaseName)
	if err := reg.Register(state); err != nil {
		return nil, fmt.Errorf("registering the Sync state metrics: %w", err)
	}
	return metrics, mgr.Add(state)
}
