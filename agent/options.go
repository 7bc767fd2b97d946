package agent

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"

	"tether.dev/tether/apply"
	"tether.dev/tether/source"
	tethersync "tether.dev/tether/sync"
)

// Options are the agent's choices, each of them one of `tether controller`'s
// flags (named beside each field). The zero value of a field is not always its
// default: start from DefaultOptions.
type Options struct {
	// Source holds the limits on git and rendering (--git-timeout,
	// --max-file-bytes, --allow-file-urls, …). Its CacheDir is ignored: the
	// git cache is CacheDir.
	Source source.Options
	// CacheDir holds the git cache and, in its last-good subdirectory, the
	// revision each Sync last applied in full (--cache-dir). An emptyDir keeps
	// it across container restarts, and what was applied survives them too.
	CacheDir string

	// Concurrency is how many Syncs reconcile at once (--concurrency); the
	// SyncSet controller runs half as many, at least one.
	Concurrency int
	// MinInterval is the shortest interval a Sync polls at (--min-interval).
	MinInterval time.Duration
	// ApplyConcurrency and DryRunConcurrency are how many objects of one Sync
	// are written, and compared with the cluster, at once (--apply-concurrency,
	// --dry-run-concurrency).
	ApplyConcurrency, DryRunConcurrency int
	// NeverTakeOver are the field managers whose fields are never taken over
	// from client-side apply (--never-take-over-managers).
	NeverTakeOver []string
	// VerifiedCacheBytes is the memory kept of live objects verified to match
	// git, per identity (--verified-cache-bytes).
	VerifiedCacheBytes int64

	// DefaultServiceAccount and AllowCrossNamespace say who Syncs act as and how
	// far they reach (--default-service-account, --allow-cross-namespace).
	DefaultServiceAccount string
	AllowCrossNamespace   bool
	// ClusterNamespace is where clusters are registered (Secrets labelled
	// tether.dev/cluster=true); empty: Home's namespace, the agent's own
	// (--cluster-namespace).
	ClusterNamespace string
	// AllowKubeConfigExec lets the kubeconfig of a remote cluster run a
	// credential plugin inside the agent (--allow-kubeconfig-exec).
	AllowKubeConfigExec bool
	// WatchNamespaces are the only namespaces served, by the manager's cache
	// and the drift watches; empty: every namespace (--watch-namespaces).
	WatchNamespaces []string
	// SyncSelector selects the Syncs of the agent's shard in the manager's
	// cache; nil: every Sync (--shard).
	SyncSelector labels.Selector
	// LeaseName is the leader election Lease of the agent's shard, which
	// tether_leader names.
	LeaseName string
	// SyncSets serves SyncSets, when the cluster has their CRD. A named shard
	// does not: its cache holds only its own Syncs, not those a SyncSet made.
	SyncSets bool

	// Home is an object in the agent's own namespace that Events outliving a
	// Sync's namespace are recorded about; nil records them on the Sync.
	Home *corev1.ObjectReference
	// Version is the agent's version, tether_build_info's label.
	Version string

	// Overrides are what a test replaces of the agent as shipped; `tether
	// controller` leaves them zero.
	Overrides Overrides
}

// Overrides replace the parts of the agent that a test must observe or hold
// back, and nothing else: their zero value is the agent as it ships.
type Overrides struct {
	// Registry registers the agent's metrics and the Sync state collector; nil
	// means controller-runtime's registry, which the manager serves at /metrics
	// and which takes one agent per process.
	Registry prometheus.Registerer
	// Recorder records the Syncs' Events; nil records them through the API
	// server, as the agent does.
	Recorder record.EventRecorder
	// Applier, when set, wraps the agent's applier (a hook in the middle of an
	// apply); the inventory is still rebuilt by the agent's own.
	Applier func(tethersync.Applier) tethersync.Applier
	// Watcher varies how the drift watches follow status changes, for
	// benchmarks that compare the agent with its earlier selves; its
	// Namespaces is always WatchNamespaces.
	Watcher tethersync.WatcherOptions
	// SkipNameValidation lets several agents in one process each run their
	// controllers under the same names.
	SkipNameValidation bool
}

// DefaultOptions returns the options of `tether controller` run without flags,
// but for the cache directory, which it leaves to the caller.
func DefaultOptions() Options {
	syncDefaults := tethersync.DefaultOptions()
	applyDefaults := apply.DefaultOptions()
	return Options{
		Source:              source.DefaultOptions(),
		Concurrency:         syncDefaults.Concurrency,
		MinInterval:         syncDefaults.MinInterval,
		ApplyConcurrency:    applyDefaults.Concurrency,
		DryRunConcurrency:   applyDefaults.DryRunConcurrency,
		VerifiedCacheBytes:  apply.DefaultVerifiedCacheBytes,
		AllowCrossNamespace: tethersync.DefaultTenancyOptions().AllowCrossNamespace,
		LeaseName:           DefaultLeaseName,
		SyncSets:            true,
		Version:             tethersync.DefaultMetricsOptions().Version,
	}
}

// DefaultLeaseName is the leader election Lease of an agent that serves every
// Sync (no --shard).
const DefaultLeaseName = "tether.dev"

// sourceOptions are the options of the agent's Source.
func (o Options) sourceOptions() source.Options {
	opts := o.Source
	opts.CacheDir = o.CacheDir
	return opts
}

// applyOptions are the options of every apply; DefaultNamespace is set per Sync.
func (o Options) applyOptions() apply.Options {
	opts := apply.DefaultOptions()
	opts.NeverTakeOver = o.NeverTakeOver
	opts.Concurrency, opts.DryRunConcurrency = o.ApplyConcurrency, o.DryRunConcurrency
	return opts
}

// syncOptions are the options of the Sync controller.
func (o Options) syncOptions() tethersync.Options {
	opts := tethersync.DefaultOptions()
	opts.Concurrency = o.Concurrency
	opts.MinInterval = o.MinInterval
	opts.SkipNameValidation = o.Overrides.SkipNameValidation
	opts.LastGoodDir = LastGoodDir(o.CacheDir)
	return opts
}

// watcherOptions are the options of the drift watches.
func (o Options) watcherOptions() tethersync.WatcherOptions {
	opts := o.Overrides.Watcher
	opts.Namespaces = o.WatchNamespaces
	return opts
}

// clusterNamespace is where clusters are registered: ClusterNamespace, or
// Home's namespace; "" when neither is known.
func (o Options) clusterNamespace() string {
	if o.ClusterNamespace == "" && o.Home != nil {
		return o.Home.Namespace
	}
	return o.ClusterNamespace
}

// tenancyOptions are who Syncs act as and how far they reach, without the
// means (the impersonating clients, the account reader and the mapper), which
// each cluster has its own of.
func (o Options) tenancyOptions() tethersync.TenancyOptions {
	return tethersync.TenancyOptions{DefaultServiceAccount: o.DefaultServiceAccount, AllowCrossNamespace: o.AllowCrossNamespace}
}

// metricsOptions are the options of the agent's metrics.
func (o Options) metricsOptions() tethersync.MetricsOptions {
	return tethersync.MetricsOptions{Version: o.Version, FetchTimeout: o.Source.Timeout}
}
