// Package rig runs Tether's agent in the test's own process, over the shared
// control plane (test/controlplane), built by agent.New and on a manager made
// with agent.ManagerOptions: the agent `tether controller` runs, cache
// transform, Trigger, last-good directory, state metrics and SyncSets included.
// A test changes only what it must (Options): it counts the requests of the
// manager or of the applies, records Events in memory, hooks the applier, turns
// a watcher option; everything else is as shipped. The waits go through
// test/harness. Each package that runs agents (sync's tests, test/rollout) keeps
// only its own helpers (how it names its Syncs, what it reads of metrics).
package rig

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"tether.dev/tether/agent"
	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// Options are what a test changes of the agent as shipped.
type Options struct {
	// Agent, when set, changes the agent's options after the rig set them: those
	// of `tether controller` without flags, but with file:// URLs allowed (the
	// tests' repositories are local), a cache directory of the test's own, a
	// minimum interval of a second (tests poll every few seconds), controllers
	// that may share their names with another agent's in the process, and
	// metrics in a registry of the agent's own (Agent.Registry).
	Agent func(*agent.Options)
	// ManagerConfig, when set, returns the config the manager runs with (its
	// cache, its client, its reads of Syncs, Secrets and pods) made of the
	// control plane's: a test counts its requests.
	ManagerConfig func(*rest.Config) *rest.Config
	// ApplyConfig, when set, returns the config of the agent's applies, their
	// discovery and the clients that impersonate a Sync's account, made of the
	// control plane's.
	ApplyConfig func(*rest.Config) *rest.Config
	// WaitTimeout bounds each of the rig's waits; zero: DefaultWaitTimeout. It
	// guards against hangs; it is not a performance assertion.
	WaitTimeout time.Duration
}

// DefaultWaitTimeout bounds each wait of a rig whose Options name none.
const DefaultWaitTimeout = 90 * time.Second

// Agent is an agent running in the test's process until the test ends.
type Agent struct {
	// Agent holds the parts agent.New built: the Reconciler, Source, Watcher,
	// Trigger, Metrics and the agent's own Applier.
	*agent.Agent
	// Client is a plain client of the test's own, which no option counts, able
	// to read and write CRDs too.
	Client client.Client
	// CacheDir is the agent's --cache-dir: the git cache and the last-good files.
	CacheDir string
	// Registry holds the agent's metrics.
	Registry *prometheus.Registry

	waitTimeout time.Duration
	stop        func()
}

// Start runs an agent with opts until the test ends (or Stop). It installs
// Tether's CRDs in the shared control plane first.
func Start(tb testing.TB, opts Options) *Agent {
	tb.Helper()
	cfg := controlplane.Shared(tb).Config()
	cfg.QPS, cfg.Burst = 500, 1000
	controlplane.InstallCRDs(tb, cfg, filepath.Join(repoRoot(), "deploy", "base", "crd"))
	a := &Agent{CacheDir: tb.TempDir(), Registry: prometheus.NewRegistry(), waitTimeout: opts.WaitTimeout}
	if a.waitTimeout == 0 {
		a.waitTimeout = DefaultWaitTimeout
	}
	a.Client = testClient(tb, cfg)

	o := agent.DefaultOptions()
	o.Source.AllowFileURLs = true
	o.CacheDir = a.CacheDir
	o.MinInterval = time.Second
	o.Overrides.Registry = a.Registry
	o.Overrides.SkipNameValidation = true
	if opts.Agent != nil {
		opts.Agent(&o)
	}
	mgrOpts, err := agent.ManagerOptions(o)
	harness.Must(tb, err)
	mgrOpts.Metrics = metricsserver.Options{BindAddress: "0"}
	mgrOpts.HealthProbeBindAddress = "0"
	mgr, err := ctrl.NewManager(configOf(cfg, opts.ManagerConfig), mgrOpts)
	harness.Must(tb, err)
	a.Agent, err = agent.New(mgr, configOf(cfg, opts.ApplyConfig), o)
	harness.Must(tb, err)

	ctx, cancel := context.WithCancel(context.WithoutCancel(tb.Context()))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once gosync.Once
	a.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				tb.Errorf("manager: %v", err)
			}
		})
	}
	tb.Cleanup(a.stop)
	return a
}

// Stop stops the agent before the test ends: a crash or a restart, as far as
// the cluster can tell, or room for a second agent that must not race it.
func (a *Agent) Stop() { a.stop() }

// WaitFor waits until cond holds of the Sync s and returns it.
func (a *Agent) WaitFor(tb testing.TB, s *v1alpha1.Sync, what string, cond func(*v1alpha1.Sync) bool) *v1alpha1.Sync {
	tb.Helper()
	return harness.WaitForSync(tb, a.Client, s, a.waitTimeout, what, cond)
}

// WaitApplied waits until the Sync s is Ready at commit, its kinds are
// watched, and the manager's cache holds the status the API server holds.
func (a *Agent) WaitApplied(tb testing.TB, s *v1alpha1.Sync, commit string) *v1alpha1.Sync {
	tb.Helper()
	applied := func(s *v1alpha1.Sync) bool {
		return strings.HasSuffix(s.Status.LastAppliedRevision, commit) && IsReady(s)
	}
	got := a.WaitFor(tb, s, "Ready at "+commit, applied)
	harness.Eventually(tb, a.waitTimeout, "the watches to sync", func(context.Context) (bool, error) { return a.Watcher.HasSynced(), nil })
	// The reconciler reads Syncs from the manager's cache; a test that reconciles
	// next must not race the cache into a stale status (and a conflicting write).
	// The cache is caught up when it holds what the API server holds now: status
	// writes that came after got (health following a rollout) move both on.
	harness.Eventually(tb, a.waitTimeout, "the manager's cache to see the status", func(ctx context.Context) (bool, error) {
		cached, live := &v1alpha1.Sync{}, &v1alpha1.Sync{}
		if err := a.Reconciler.Cluster.Syncs.Get(ctx, client.ObjectKeyFromObject(s), cached); err != nil {
			return false, err
		}
		if err := a.Client.Get(ctx, client.ObjectKeyFromObject(s), live); err != nil {
			return false, err
		}
		if cached.ResourceVersion != live.ResourceVersion {
			return false, nil
		}
		got = live
		return applied(live), nil
	})
	return got
}

// Reconcile runs one reconcile of s directly, the way a resync would.
func (a *Agent) Reconcile(tb testing.TB, s *v1alpha1.Sync) {
	tb.Helper()
	if _, err := a.Reconciler.Reconcile(tb.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(s)}); err != nil {
		tb.Fatalf("reconcile: %v", err)
	}
}

// IsReady says whether the Sync's Ready condition is True.
func IsReady(s *v1alpha1.Sync) bool {
	return apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.ReadyCondition)
}

// testClient is the test's own client: the agent's scheme, and CRDs.
func testClient(tb testing.TB, cfg *rest.Config) client.Client {
	tb.Helper()
	scheme, err := agent.NewScheme()
	harness.Must(tb, err)
	harness.Must(tb, apiextensionsv1.AddToScheme(scheme))
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	harness.Must(tb, err)
	return c
}

// configOf is cfg as wrap makes it, or a copy of cfg.
func configOf(cfg *rest.Config, wrap func(*rest.Config) *rest.Config) *rest.Config {
	if wrap == nil {
		return rest.CopyConfig(cfg)
	}
	return wrap(rest.CopyConfig(cfg))
}

// repoRoot is the repository's root directory, from this file's place in it
// (test/rig), so that every package's agent installs the same CRDs.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
