package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"tether.dev/tether/agent"
	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/source"
	tethersync "tether.dev/tether/sync"
)

// newControllerCommand runs the agent. Its flags are Go's flag package's, as they
// always were (the Deployment in deploy/ and the end-to-end tests pass them), so
// cobra hands the command line over unparsed.
func newControllerCommand() *cobra.Command {
	return &cobra.Command{
		Use:                "controller [flags]",
		Short:              "Run the agent (in a cluster, or with --kubeconfig)",
		Long:               "Run the agent: reconcile every Sync the agent can see until SIGTERM.\nRun 'tether controller -h' for its flags.",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runController(cmd.Context(), args, cmd.ErrOrStderr())
		},
	}
}

// controllerFlags are the command line of `tether controller`.
type controllerFlags struct {
	kubeconfig      string
	metricsAddr     string
	metricsSecure   bool
	probeAddr       string
	pprofAddr       string
	webhookAddr     string
	webhookSecrets  string
	leaderElect     bool
	leaderNamespace string
	lease           leaseTimings
	concurrency     int
	cacheDir        string
	apiQPS          float64
	apiBurst        int
	neverTakeOver   []string
	// How many objects of one Sync are written, and compared with the cluster
	// (read and dry-run), at once.
	applyConcurrency  int
	dryRunConcurrency int
	// Tenancy: who Syncs act as, how far they reach, which namespaces are served.
	defaultServiceAccount string
	allowCrossNamespace   bool
	watchNamespaces       []string
	// Remote clusters: where they are registered, and whether a kubeconfig may
	// run a credential plugin.
	clusterNamespace    string
	allowKubeConfigExec bool
	shard               shardFlag
	minInterval         time.Duration
	verifiedBytes       int64
	// source holds the limits on git and rendering.
	source source.Options
	// notify holds the flags of notifications.
	notify notifyFlags
	zap    zap.Options
}

func parseControllerFlags(args []string, stderr io.Writer) (*controllerFlags, error) {
	f := &controllerFlags{}
	fs := controllerFlagSet(f, stderr)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() != 0 {
		return nil, fmt.Errorf("%w: unexpected arguments %v", errUsage, fs.Args())
	}
	if err := f.lease.check(); err != nil {
		return nil, err
	}
	return f, nil
}

// controllerFlagSet binds the flags of `tether controller` to f.
func controllerFlagSet(f *controllerFlags, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to a kubeconfig, to run outside a cluster. Default: in-cluster config, then $KUBECONFIG.")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "Address that serves Prometheus metrics at /metrics; \"0\" disables it.")
	fs.BoolVar(&f.metricsSecure, "metrics-secure", false, "Serve /metrics over HTTPS (a self-signed certificate) to authenticated and authorized clients only: a scraper's bearer token is checked with a TokenReview, and its right to get the non-resource URL /metrics with a SubjectAccessReview (ClusterRole tether-metrics-reader). deploy/ turns it on.")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "Address that serves /healthz and /readyz.")
	fs.StringVar(&f.pprofAddr, "pprof-bind-address", "0", "Address that serves Go's profiles at /debug/pprof/ (heap, CPU, goroutines), to find where memory or time goes; \"0\" (the default) disables it. Bind it to loopback (127.0.0.1:6060) and reach it by port-forward: profiles are not for a public listener.")
	fs.StringVar(&f.webhookAddr, "webhook-bind-address", ":9292", "Address of the git push webhook receiver (POST /hooks/github, /hooks/gitlab, /hooks/gitea, /hooks/generic); \"0\" disables it.")
	fs.StringVar(&f.webhookSecrets, "webhook-secrets-dir", "", "Directory holding one secret file per webhook receiver (github, gitlab, gitea, generic), e.g. a mounted Secret; a receiver without one is disabled.")
	fs.BoolVar(&f.leaderElect, "leader-elect", false, "Elect a leader so that only one of several replicas reconciles.")
	fs.StringVar(&f.leaderNamespace, "leader-election-namespace", "", "Namespace of the leader election Lease. Default: the pod's namespace.")
	bindLeaseFlags(fs, &f.lease)
	fs.IntVar(&f.concurrency, "concurrency", tethersync.DefaultOptions().Concurrency, "How many Syncs are reconciled at once.")
	fs.IntVar(&f.applyConcurrency, "apply-concurrency", apply.DefaultOptions().Concurrency, "How many objects of one Sync are written at once.")
	fs.IntVar(&f.dryRunConcurrency, "dry-run-concurrency", apply.DefaultOptions().DryRunConcurrency, "How many objects of one Sync are compared with the cluster (read and dry-run) at once, when a revision is validated before any write; a dry-run writes nothing to etcd, so the API server answers more of them at once than writes.")
	fs.StringVar(&f.cacheDir, "cache-dir", defaultCacheDir(), "Directory for cached git repositories; keep it across restarts to fetch less.")
	fs.Float64Var(&f.apiQPS, "kube-api-qps", -1, "Sustained requests per second to the API server, limited in the agent; negative: no client-side limit (the default), the API server's Priority and Fairness protects it (see docs/performance.md). --concurrency bounds the requests in flight.")
	fs.IntVar(&f.apiBurst, "kube-api-burst", 100, "Burst of requests to the API server, when --kube-api-qps limits them.")
	fs.Func("never-take-over-managers", "Comma-separated field managers whose fields Tether never takes over from client-side apply (break-glass edits).", func(v string) error {
		for _, m := range strings.Split(v, ",") {
			if m = strings.TrimSpace(m); m != "" {
				f.neverTakeOver = append(f.neverTakeOver, m)
			}
		}
		return nil
	})
	fs.StringVar(&f.defaultServiceAccount, "default-service-account", "", "ServiceAccount, in each Sync's own namespace, that Syncs naming no spec.serviceAccountName act as. Empty: such Syncs act as the agent itself.")
	fs.BoolVar(&f.allowCrossNamespace, "allow-cross-namespace", tethersync.DefaultTenancyOptions().AllowCrossNamespace, "Let a Sync apply objects outside its own namespace (other namespaces, cluster-scoped objects), as far as its account's RBAC allows. false refuses such revisions whole.")
	fs.StringVar(&f.clusterNamespace, "cluster-namespace", "", "Namespace whose Secrets labelled tether.dev/cluster=true register the remote clusters Syncs name in spec.destination.cluster. Default: the agent's own namespace (--leader-election-namespace, or the pod's).")
	fs.BoolVar(&f.allowKubeConfigExec, "allow-kubeconfig-exec", false, "Let the kubeconfig of a remote cluster (spec.destination) run a credential plugin (exec): a program the kubeconfig names runs inside the agent's container. Off: such kubeconfigs are refused (KubeConfigInvalid).")
	fs.Func("watch-namespaces", "Comma-separated namespaces the agent serves: only Syncs there are reconciled, and the cache and drift watches are confined to them. Default: every namespace.", func(v string) error {
		for _, ns := range strings.Split(v, ",") {
			if ns = strings.TrimSpace(ns); ns != "" {
				f.watchNamespaces = append(f.watchNamespaces, ns)
			}
		}
		return nil
	})
	bindSourceFlags(fs, &f.source)
	bindNotifyFlags(fs, &f.notify)
	fs.Int64Var(&f.verifiedBytes, "verified-cache-bytes", apply.DefaultVerifiedCacheBytes, "Memory (as JSON) kept of live objects verified to match git, which spares their dry-run at the next resync.")
	fs.Var(&f.shard, "shard", "Serve only the Syncs labelled "+v1alpha1.ShardLabel+"=<value> (--shard \"\": only those without the label), with a leader of this shard's own. Unset: every Sync. See docs/sharding.md.")
	fs.DurationVar(&f.minInterval, "min-interval", tethersync.DefaultOptions().MinInterval, "Shortest interval a Sync polls its repository at, whatever its spec.source.interval says.")
	f.zap.BindFlags(fs)
	return fs
}

// bindSourceFlags binds the limits on git and rendering, with defaults that fit
// the 512 MiB the shipped Deployment allows.
func bindSourceFlags(fs *flag.FlagSet, o *source.Options) {
	d := source.DefaultOptions()
	fs.BoolVar(&o.AllowFileURLs, "allow-file-urls", false, "Let Syncs name file:// repositories, which read the agent's own file system (demos and tests only).")
	bindRenderLimits(fs, o)
	fs.IntVar(&o.MaxTreeEntries, "max-tree-entries", d.MaxTreeEntries, "Most git tree entries one render reads (a directory counts each time the commit names it).")
	fs.Int64Var(&o.RenderCacheBytes, "render-cache-bytes", d.RenderCacheBytes, "Memory kept for rendered revisions, each object held as its JSON (about 450 bytes for an ordinary object) and decoded on use, shared fairly between namespaces: over it, the least recently used render of the namespace holding the most goes first.")
	fs.IntVar(&o.MaxConcurrentRenders, "max-concurrent-renders", d.MaxConcurrentRenders, "Renders that may run at once, whatever --concurrency.")
	fs.DurationVar(&o.RenderTimeout, "render-timeout", d.RenderTimeout, "Longest a Sync waits for one render; past it the Sync fails naming its path, and its render slot is free again.")
	fs.DurationVar(&o.Timeout, "git-timeout", d.Timeout, "Longest one git fetch may take.")
	fs.DurationVar(&o.ListTimeout, "git-list-timeout", d.ListTimeout, "Longest one listing of a repository's refs (a small answer) may take.")
	fs.IntVar(&o.MaxFetchesPerHost, "max-fetches-per-host", d.MaxFetchesPerHost, "Git conversations with one host at once (half as many callers again wait a few seconds in its line, least recently served first); keep it below --concurrency so that a silent host cannot hold every worker.")
	fs.Int64Var(&o.MaxCacheBytes, "max-git-cache-bytes", d.MaxCacheBytes, "Disk the git cache may take (keep it under the cache volume's size), shared fairly between the namespaces that use it: a fetch that would pass the cap or its namespace's share reports CacheFull on its Sync. 0: no cap.")
	fs.DurationVar(&o.CacheIdle, "git-cache-idle", d.CacheIdle, "How long a cached repository no Sync fetches is kept before it is removed from memory and disk.")
	fs.DurationVar(&o.CacheKeepRecent, "git-cache-keep-recent", d.CacheKeepRecent, "A namespace over its share of the git cache gives up its own repositories (no other namespace's) that its Syncs have not polled for this long (least recently polled first) before a fetch of it is refused with CacheFull, and before anyone else's when the whole cache is full; those polled since are kept.")
	fs.DurationVar(&o.HostFailureMemory, "host-failure-memory", d.HostFailureMemory, "How long a git host that could not be reached is not asked again (its Syncs fail at once meanwhile).")
	fs.Int64Var(&o.MaxChartIndexBytes, "max-chart-index-bytes", d.MaxChartIndexBytes, "Largest index.yaml of a chart repository read (spec.source.chart).")
	fs.Int64Var(&o.MaxChartPackageBytes, "max-chart-package-bytes", d.MaxChartPackageBytes, "Largest chart package (.tgz) downloaded; unpacked, it is bounded by --max-file-bytes per file and --max-render-read-bytes in all.")
	fs.IntVar(&o.MaxChartFiles, "max-chart-files", d.MaxChartFiles, "Most entries a chart package may hold.")
	fs.Int64Var(&o.ChartCacheBytes, "chart-cache-bytes", d.ChartCacheBytes, "Memory kept for downloaded chart packages (as downloaded), least recently used first out.")
	fs.Int64Var(&o.MaxArtifactBytes, "max-artifact-bytes", d.MaxArtifactBytes, "Largest content layer of an OCI artifact downloaded (spec.source.oci); unpacked, it is bounded by --max-file-bytes per file, --max-render-read-bytes in all and --max-tree-entries entries.")
	fs.Int64Var(&o.ArtifactCacheBytes, "artifact-cache-bytes", d.ArtifactCacheBytes, "Disk the unpacked OCI artifacts may take under the cache directory, least recently used first out.")
}

// leaseTimings are the leader election Lease's timings. docs/reliability.md says
// why the defaults are what they are: a killed leader is replaced within about
// duration + retryPeriod, and a leader that cannot renew for renewDeadline (an API
// server restart, a loaded etcd) steps down and exits.
type leaseTimings struct {
	duration, renewDeadline, retryPeriod time.Duration
}

func bindLeaseFlags(fs *flag.FlagSet, l *leaseTimings) {
	fs.DurationVar(&l.duration, "leader-election-lease-duration", 15*time.Second, "How long a standby waits after the leader's last renewal before it takes the Lease.")
	fs.DurationVar(&l.renewDeadline, "leader-election-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew before it steps down; shorter than the lease duration.")
	fs.DurationVar(&l.retryPeriod, "leader-election-retry-period", 2*time.Second, "How often the leader renews, and a standby tries to take the Lease.")
}

// check refuses timings under which two replicas could both think they lead.
func (l leaseTimings) check() error {
	if l.retryPeriod <= 0 || l.renewDeadline <= l.retryPeriod || l.duration <= l.renewDeadline {
		return fmt.Errorf("%w: leader election needs 0 < retry period (%v) < renew deadline (%v) < lease duration (%v)", errUsage, l.retryPeriod, l.renewDeadline, l.duration)
	}
	return nil
}

func defaultCacheDir() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "tether")
	}
	return filepath.Join(os.TempDir(), "tether-cache")
}

// runController runs the agent until ctx ends.
func runController(ctx context.Context, args []string, stderr io.Writer) error {
	f, err := parseControllerFlags(args, stderr)
	if err != nil {
		return err
	}
	if f.zap.StacktraceLevel == nil {
		// Stack traces are for bugs, not for bad input in git or a cluster that
		// refuses: only a panic carries one unless --zap-stacktrace-level says more.
		f.zap.StacktraceLevel = zapcore.PanicLevel
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap), zap.WriteTo(stderr)))
	log := ctrl.Log.WithName("setup")
	gogc := tuneGC()

	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = float32(f.apiQPS), f.apiBurst
	cfg.UserAgent = "tether/" + version

	mgr, err := newManager(cfg, f)
	if err != nil {
		return err
	}
	if err := setupAgent(mgr, cfg, f); err != nil {
		return err
	}
	if err := addNotifier(mgr, f); err != nil {
		return err
	}
	log.Info("starting", "version", version, "cacheDir", f.cacheDir, "leaderElect", f.leaderElect, "shard", f.shard.describe(),
		"watchNamespaces", f.watchNamespaces, "defaultServiceAccount", f.defaultServiceAccount, "allowCrossNamespace", f.allowCrossNamespace,
		"gogc", gogc)
	return mgr.Start(ctx)
}

// defaultGCPercent is the agent's GOGC unless its environment sets one. Go's
// default, 100, lets the heap grow to twice what is live before collecting; the
// agent's heap is mostly the objects of the revision it applies, read once, so at
// 50 a first sync peaks about a fifth lower (docs/performance.md) for a few percent
// more CPU spent collecting, in an agent that mostly waits on the API server.
const defaultGCPercent = 50

// tuneGC sets the garbage collector's target to defaultGCPercent unless GOGC is set,
// and returns the GOGC in force, as the environment would say it.
func tuneGC() string {
	if v, set := os.LookupEnv("GOGC"); set {
		return v
	}
	debug.SetGCPercent(defaultGCPercent)
	return strconv.Itoa(defaultGCPercent)
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
		}
		return withOwnTransport(cfg), nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("finding cluster config (use --kubeconfig outside a cluster): %w", err)
	}
	return withOwnTransport(cfg), nil
}

// newScheme returns the types the agent and the CLI read typed.
func newScheme() (*runtime.Scheme, error) { return agent.NewScheme() }

func newManager(cfg *rest.Config, f *controllerFlags) (ctrl.Manager, error) {
	opts, err := agent.ManagerOptions(f.agentOptions())
	if err != nil {
		return nil, err
	}
	for _, addr := range []*string{&f.metricsAddr, &f.probeAddr} {
		if *addr, err = portTaken(*addr); err != nil {
			return nil, err
		}
	}
	opts.Metrics = metricsOptions(f)
	opts.HealthProbeBindAddress = f.probeAddr
	opts.PprofBindAddress = f.pprofAddr
	opts.LeaderElection = f.leaderElect
	opts.LeaderElectionID = f.shard.leaseName()
	opts.LeaderElectionNamespace = f.leaderNamespace
	opts.LeaderElectionReleaseOnCancel = true
	opts.LeaseDuration = &f.lease.duration
	opts.RenewDeadline = &f.lease.renewDeadline
	opts.RetryPeriod = &f.lease.retryPeriod
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// agentOptions are the agent's options as the flags set them.
func (f *controllerFlags) agentOptions() agent.Options {
	return agent.Options{
		Source:                f.source,
		CacheDir:              f.cacheDir,
		Concurrency:           f.concurrency,
		MinInterval:           f.minInterval,
		ApplyConcurrency:      f.applyConcurrency,
		DryRunConcurrency:     f.dryRunConcurrency,
		NeverTakeOver:         f.neverTakeOver,
		VerifiedCacheBytes:    f.verifiedBytes,
		DefaultServiceAccount: f.defaultServiceAccount,
		AllowCrossNamespace:   f.allowCrossNamespace,
		ClusterNamespace:      f.clusterNamespace,
		AllowKubeConfigExec:   f.allowKubeConfigExec,
		WatchNamespaces:       f.watchNamespaces,
		SyncSelector:          f.shard.selector(),
		LeaseName:             f.shard.leaseName(),
		SyncSets:              !f.shard.set || f.shard.name == "",
		Home:                  homeOf(f, inClusterNamespaceFile),
		Version:               version,
	}
}

// setupAgent builds the agent (agent.New, the one wiring the test rigs use too)
// and serves its push webhook receiver.
func setupAgent(mgr ctrl.Manager, cfg *rest.Config, f *controllerFlags) error {
	a, err := agent.New(mgr, cfg, f.agentOptions())
	if err != nil {
		return err
	}
	return addWebhookServer(mgr, f, a.Trigger)
}

// metricsOptions says how /metrics is served: in plain HTTP to anyone who reaches
// the port, or with --metrics-secure over HTTPS to a scraper whose token the API
// server authenticates and authorizes for GET /metrics (controller-runtime's
// secure serving, with a self-signed certificate; metricsAuthFilter checks the
// scraper).
func metricsOptions(f *controllerFlags) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: f.metricsAddr}
	if f.metricsSecure {
		opts.SecureServing = true
		opts.FilterProvider = metricsAuthFilter(defaultMetricsAuthOptions())
	}
	return opts
}

// addWebhookServer serves the push webhook receiver on every replica, leader or
// not: a git host reaches whichever replica the Service picks, and the Trigger
// passes a push on to the leader.
func addWebhookServer(mgr ctrl.Manager, f *controllerFlags, trigger *tethersync.Trigger) error {
	if f.webhookAddr == "0" {
		return nil
	}
	opts := source.DefaultWebhookOptions()
	opts.Secret = source.SecretsDir(f.webhookSecrets)
	opts.OnPush = trigger.OnPush
	shutdown := 10 * time.Second
	return mgr.Add(&manager.Server{
		Name: "webhook",
		Server: &http.Server{
			Addr:              f.webhookAddr,
			Handler:           source.NewWebhookHandler(opts),
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      30 * time.Second,
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    64 << 10,
		},
		ShutdownTimeout: &shutdown,
	})
}

// portTaken returns addr with a port of its own in place of port 0 ("any port"),
// so that what the agent logs and serves on is the port it took, which a person
// or a scraper can then reach; controller-runtime's servers would log
// "127.0.0.1:0". The port is free when it is taken here and bound at once after,
// by the manager; any other address, and "0" (off), is returned as it is.
func portTaken(addr string) (string, error) {
	host, port, splitErr := net.SplitHostPort(addr)
	if splitErr != nil || port != "0" {
		return addr, nil // not a host:port with port 0: the manager judges it
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("taking a port for %s: %w", addr, err)
	}
	taken := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return "", err
	}
	return net.JoinHostPort(host, strconv.Itoa(taken)), nil
}
