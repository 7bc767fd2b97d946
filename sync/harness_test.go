package sync_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/source"
	tethersync "tether.dev/tether/sync"
	"tether.dev/tether/test/apicount"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/workload"
)

func TestMain(m *testing.M) {
	source.ServeRenderWorker()
	ctrl.SetLogger(logr.Discard())
	os.Exit(controlplane.RunMain(m, controlplane.Options{}))
}

// waitTimeout guards every wait against hangs; it is not a performance assertion.
const waitTimeout = 90 * time.Second

// agent is the reconciler wired the way `tether controller` wires it, in process,
// with every request of its applies and of its own client counted.
type agent struct {
	r       *tethersync.Reconciler
	watcher *tethersync.Watcher
	trigger *tethersync.Trigger
	src     *source.Source
	// cacheDir is the agent's --cache-dir: the git cache and the last-good files.
	cacheDir string
	c        client.Client // a plain client for the test itself
	applies  *apicount.Counter
	manager  *apicount.Counter // the manager's client: Syncs and their status
	registry *prometheus.Registry
	recorder *record.FakeRecorder
	// hooked runs a test's hook once, in the middle of the next apply.
	hooked *hookedApplier
	// stop stops the agent (a crash or a restart, as far as the cluster can tell).
	stop func()
}

// startAgent runs a manager with the Sync reconciler until the test ends. With
// tenancy, Syncs act as service accounts, wired as `tether controller` wires them
// (see impersonating in tenancy_test.go).
func startAgent(tb testing.TB, tenancy ...tethersync.TenancyOptions) *agent {
	tb.Helper()
	cp := controlplane.Shared(tb)
	cfg := cp.Config()
	cfg.QPS, cfg.Burst = 500, 1000
	controlplane.InstallCRDs(tb, cfg, filepath.Join("..", "deploy", "base", "crd"))

	scheme := runtime.NewScheme()
	harness.Must(tb, clientgoscheme.AddToScheme(scheme))
	harness.Must(tb, v1alpha1.AddToScheme(scheme))
	harness.Must(tb, apiextensionsv1.AddToScheme(scheme))
	a := &agent{applies: &apicount.Counter{}, manager: &apicount.Counter{}, registry: prometheus.NewRegistry(), recorder: record.NewFakeRecorder(1000)}
	mgr, err := ctrl.NewManager(a.manager.Wrap(cfg), ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cache.Options{DefaultTransform: tethersync.CacheTransform},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	harness.Must(tb, err)
	applyClient, err := client.New(a.applies.Wrap(cfg), client.Options{Scheme: scheme, Mapper: mgr.GetRESTMapper()})
	harness.Must(tb, err)
	a.c, err = client.New(cfg, client.Options{Scheme: scheme})
	harness.Must(tb, err)
	a.cacheDir = tb.TempDir()
	a.src, err = source.New(source.Options{CacheDir: a.cacheDir, AllowFileURLs: true})
	harness.Must(tb, err)

	a.watcher = tethersync.NewWatcher(mgr.GetCache())
	a.trigger = tethersync.NewTrigger(mgr.GetClient(), mgr.GetCache(), a.src, mgr.Elected())
	disco, err := discovery.NewDiscoveryClientForConfig(a.applies.Wrap(cfg))
	harness.Must(tb, err)
	managerOpts, err := apply.ManagerOptions{LiveVersions: a.watcher, Discovery: disco}.WithClientsFor(a.applies.Wrap(cfg))
	harness.Must(tb, err)
	applier := apply.NewManager(applyClient, managerOpts)
	a.hooked = &hookedApplier{Applier: applier}
	var tenants *tethersync.Tenancy
	for _, t := range tenancy {
		t.Impersonate = impersonating(tb, cfg, scheme, mgr.GetRESTMapper(), disco, a)
		t.Accounts, t.Mapper = mgr.GetAPIReader(), mgr.GetRESTMapper()
		tenants = tethersync.NewTenancy(t)
	}
	a.r, err = tethersync.NewReconciler(mgr, tethersync.Parts{
		Source:       a.src,
		Applier:      a.hooked,
		Finder:       applier,
		ApplyOptions: apply.DefaultOptions(),
		Tenancy:      tenants,
		Watcher:      a.watcher,
		Trigger:      a.trigger,
		Recorder:     a.recorder,
		Metrics:      tethersync.NewMetrics(a.registry, tethersync.DefaultMetricsOptions()),
	})
	harness.Must(tb, err)
	opts := tethersync.DefaultOptions()
	opts.SkipNameValidation = true
	opts.MinInterval = time.Second                            // tests poll every few seconds
	opts.LastGoodDir = filepath.Join(a.cacheDir, "last-good") // as tether controller keeps it
	harness.Must(tb, a.r.SetupWithManager(mgr, opts))

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
	tb.Cleanup(func() { a.stop() })
	return a
}

// newSync creates a Sync of url's main branch at path "apps", into namespace ns.
func (a *agent) newSync(tb testing.TB, ns, url string, mutate ...func(*v1alpha1.Sync)) *v1alpha1.Sync {
	tb.Helper()
	s := &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: v1alpha1.SyncSpec{
			Source: v1alpha1.SourceSpec{
				URL: url, Ref: v1alpha1.GitRef{Branch: "main"}, Path: "apps",
				// Long enough that only the test (or a watch) triggers reconciles.
				Interval: &metav1.Duration{Duration: time.Hour},
			},
			Destination: v1alpha1.DestinationSpec{Namespace: ns},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	harness.Must(tb, a.c.Create(tb.Context(), s))
	return s
}

// waitFor polls the Sync until cond holds and returns it.
func (a *agent) waitFor(tb testing.TB, s *v1alpha1.Sync, what string, cond func(*v1alpha1.Sync) bool) *v1alpha1.Sync {
	tb.Helper()
	got := &v1alpha1.Sync{}
	harness.Eventually(tb, waitTimeout, what, func(ctx context.Context) (bool, error) {
		if err := a.c.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
			return false, err
		}
		if !cond(got) {
			return false, fmt.Errorf("status: %s", describe(got))
		}
		return true, nil
	})
	return got
}

// waitApplied waits until the Sync is Ready at commit and its kinds are watched.
func (a *agent) waitApplied(tb testing.TB, s *v1alpha1.Sync, commit string) *v1alpha1.Sync {
	tb.Helper()
	applied := func(s *v1alpha1.Sync) bool {
		return strings.HasSuffix(s.Status.LastAppliedRevision, commit) && isReady(s)
	}
	got := a.waitFor(tb, s, "Ready at "+commit, applied)
	harness.Eventually(tb, waitTimeout, "the watches to sync", func(context.Context) (bool, error) { return a.watcher.HasSynced(), nil })
	// The reconciler reads Syncs from the manager's cache; a test that reconciles
	// next must not race the cache into a stale status (and a conflicting write).
	// The cache is caught up when it holds what the API server holds now: status
	// writes that came after got (health following a rollout) move both on.
	harness.Eventually(tb, waitTimeout, "the manager's cache to see the status", func(ctx context.Context) (bool, error) {
		cached, live := &v1alpha1.Sync{}, &v1alpha1.Sync{}
		if err := a.r.Cluster.Syncs.Get(ctx, client.ObjectKeyFromObject(s), cached); err != nil {
			return false, err
		}
		if err := a.c.Get(ctx, client.ObjectKeyFromObject(s), live); err != nil {
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

// reconcile runs one reconcile of s directly, the way a resync would.
func (a *agent) reconcile(tb testing.TB, s *v1alpha1.Sync) {
	tb.Helper()
	if _, err := a.r.Reconcile(tb.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(s)}); err != nil {
		tb.Fatalf("reconcile: %v", err)
	}
}

// hookedApplier is the agent's Applier with a hook a test can have run once at the
// start of the next ApplyAll, after the reconcile read its Sync: what a concurrent
// writer would do at that moment.
type hookedApplier struct {
	tethersync.Applier
	hook atomic.Pointer[func()]
}

func (h *hookedApplier) ApplyAll(ctx context.Context, objs []*unstructured.Unstructured, opts apply.Options) (*apply.ChangeSet, error) {
	if f := h.hook.Swap(nil); f != nil {
		(*f)()
	}
	return h.Applier.ApplyAll(ctx, objs, opts)
}

// events returns the events recorded so far.
func (a *agent) events() []string {
	var out []string
	for {
		select {
		case e := <-a.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func isReady(s *v1alpha1.Sync) bool {
	return apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.ReadyCondition)
}

func describe(s *v1alpha1.Sync) string {
	var b strings.Builder
	fmt.Fprintf(&b, "revision %q sync %s health %s", s.Status.LastAppliedRevision, s.Status.Sync, s.Status.Health)
	for _, c := range s.Status.Conditions {
		fmt.Fprintf(&b, "; %s=%s %s: %.200s", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// apps and app are the benchmarks' workload: n apps of four objects, and one.
var apps, app = workload.Apps, workload.App
