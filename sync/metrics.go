package sync

import (
	"runtime"
	gosync "sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/source"
)

// Metrics are the Prometheus series Tether records as it works: counters and
// histograms of reconciles, applies and fetches, which only the replica doing the
// work can count. The state of each Sync (tether_sync_info and its siblings) is not
// recorded here but read from the Syncs at scrape time by StateCollector, on every
// replica. The alerts shipped in deploy/monitoring are written against these names
// and labels (see DESIGN.md).
type Metrics struct {
	duration      *prometheus.HistogramVec
	applied       *prometheus.CounterVec
	fetchDuration *prometheus.HistogramVec
	fetchErrors   *prometheus.CounterVec
	drift         *prometheus.CounterVec
	fights        *prometheus.CounterVec
	rollbacks     *prometheus.CounterVec
	hookRuns      *prometheus.CounterVec
	hookFailures  *prometheus.CounterVec

	mu gosync.Mutex
	// fetchURL remembers the (redacted) URL each Sync last fetched, so that the
	// series of a URL are deleted when no Sync fetches it any more: the url label
	// cannot grow without bound as Syncs come, go and change repositories.
	fetchURL map[string]string
	// synced holds, by namespace/name, when a reconcile of this replica last found
	// the Sync Ready: a check of the newest revision against the cluster that
	// changed nothing writes no status, so status.lastAppliedTime alone would
	// age while the Sync is in fact synced. StateCollector exports the later of the two.
	synced map[string]time.Time
}

// MetricsOptions configure NewMetrics.
type MetricsOptions struct {
	// Version is the agent's version, the version label of tether_build_info.
	Version string
	// FetchTimeout is the longest one git fetch may take (source.Options.Timeout):
	// the buckets of tether_git_fetch_duration_seconds reach it, so that a fetch
	// that takes minutes is not lumped into +Inf with one that hangs.
	FetchTimeout time.Duration
}

// DefaultMetricsOptions returns the options of an agent with source's default
// fetch timeout.
func DefaultMetricsOptions() MetricsOptions {
	return MetricsOptions{Version: "dev", FetchTimeout: source.DefaultOptions().Timeout}
}

// NewMetrics creates the metrics and registers them, and tether_build_info, with reg.
func NewMetrics(reg prometheus.Registerer, opts MetricsOptions) *Metrics {
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tether_reconcile_duration_seconds",
			Help:    "Time one reconcile of a Sync took.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"namespace", "name"}),
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_apply_objects_total",
			Help: "Objects applied, by outcome (created, configured, unchanged, pruned, failed).",
		}, []string{"namespace", "name", "action"}),
		fetchDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tether_git_fetch_duration_seconds",
			Help:    "Time to resolve a ref and fetch its commit; the top bucket is the fetch timeout.",
			Buckets: FetchBuckets(opts.FetchTimeout),
		}, []string{"url"}),
		fetchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_git_fetch_errors_total",
			Help: "Failed git fetches.",
		}, []string{"url"}),
		drift: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_drift_corrections_total",
			Help: "Reconciles that wrote to correct drift in the cluster from an already applied revision.",
		}, []string{"namespace", "name"}),
		fights: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_field_fights_total",
			Help: "Fields Tether stopped correcting because another field manager kept changing them back.",
		}, []string{"namespace", "name", "manager"}),
		rollbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_rollbacks_total",
			Help: "Automatic rollbacks (spec.rollback.onFailure) to the last Healthy revision, by why the newer one failed (Degraded, HealthTimeout).",
		}, []string{"namespace", "name", "reason"}),
		hookRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_hook_runs_total",
			Help: "Hook objects created for a revision's run, by phase (PreSync, Sync, PostSync, SyncFail).",
		}, []string{"namespace", "name", "phase"}),
		hookFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_hook_failures_total",
			Help: "Hooks that failed (a Job that failed, an object Degraded), by phase.",
		}, []string{"namespace", "name", "phase"}),
		fetchURL: map[string]string{},
		synced:   map[string]time.Time{},
	}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tether_build_info",
		Help: "Always 1 on a running agent; its labels name the build. Absent means no agent is scraped (TetherAgentDown).",
	}, []string{"version", "goversion"})
	build.WithLabelValues(opts.Version, runtime.Version()).Set(1)
	reg.MustRegister(m.duration, m.applied, m.fetchDuration, m.fetchErrors, m.drift, m.fights, m.rollbacks, m.hookRuns, m.hookFailures, build)
	return m
}

// fetchLadder is the ladder of fetch-duration buckets, in seconds: a cached ref
// listing takes milliseconds, a clone of a large repository minutes.
var fetchLadder = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 180, 240, 300, 600, 900, 1800, 3600}

// FetchBuckets returns the buckets of tether_git_fetch_duration_seconds for a
// fetch timeout: the ladder below the timeout, then the timeout itself. Zero or
// less means source's default timeout.
func FetchBuckets(timeout time.Duration) []float64 {
	if timeout <= 0 {
		timeout = source.DefaultOptions().Timeout
	}
	top := timeout.Seconds()
	var buckets []float64
	for _, b := range fetchLadder {
		if b < top {
			buckets = append(buckets, b)
		}
	}
	return append(buckets, top)
}

// ObserveReconcile records how long one reconcile took.
func (m *Metrics) ObserveReconcile(obj *v1alpha1.Sync, d time.Duration) {
	m.duration.WithLabelValues(obj.Namespace, obj.Name).Observe(d.Seconds())
}

// ObserveFetch records one git fetch of obj's repository. URLs lose any
// credentials before they become label values.
func (m *Metrics) ObserveFetch(obj *v1alpha1.Sync, d time.Duration, err error) {
	url := source.RedactURL(sourceURL(obj))
	m.useURL(obj.Namespace+"/"+obj.Name, url)
	m.fetchDuration.WithLabelValues(url).Observe(d.Seconds())
	if err != nil {
		m.fetchErrors.WithLabelValues(url).Inc()
	}
}

// useURL records that the Sync key fetches url ("" for none), and deletes the
// series of the URL it fetched before if no other Sync fetches that one.
func (m *Metrics) useURL(key, url string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.fetchURL[key]
	if ok && old == url {
		return
	}
	if url == "" {
		delete(m.fetchURL, key)
	} else {
		m.fetchURL[key] = url
	}
	if !ok || old == "" {
		return
	}
	for _, u := range m.fetchURL {
		if u == old {
			return
		}
	}
	m.fetchDuration.DeleteLabelValues(old)
	m.fetchErrors.DeleteLabelValues(old)
}

// CountChanges counts what an apply did to each object.
func (m *Metrics) CountChanges(obj *v1alpha1.Sync, cs *apply.ChangeSet) {
	if cs == nil || cs.DryRun {
		return
	}
	for _, a := range []apply.Action{apply.ActionCreated, apply.ActionConfigured, apply.ActionUnchanged, apply.ActionPruned, apply.ActionFailed} {
		if n := cs.Count(a); n > 0 {
			m.applied.WithLabelValues(obj.Namespace, obj.Name, string(a)).Add(float64(n))
		}
	}
}

// CountDriftCorrection counts one reconcile that corrected drift.
func (m *Metrics) CountDriftCorrection(obj *v1alpha1.Sync) {
	m.drift.WithLabelValues(obj.Namespace, obj.Name).Inc()
}

// CountFieldFight counts one field given up to manager after a fight.
func (m *Metrics) CountFieldFight(obj *v1alpha1.Sync, manager string) {
	m.fights.WithLabelValues(obj.Namespace, obj.Name, manager).Inc()
}

// CountRollback counts one automatic rollback, by why the revision failed.
func (m *Metrics) CountRollback(obj *v1alpha1.Sync, reason string) {
	m.rollbacks.WithLabelValues(obj.Namespace, obj.Name, reason).Inc()
}

// CountHookRuns counts n hook objects created at phase.
func (m *Metrics) CountHookRuns(obj *v1alpha1.Sync, phase string, n int) {
	if n > 0 {
		m.hookRuns.WithLabelValues(obj.Namespace, obj.Name, phase).Add(float64(n))
	}
}

// CountHookFailure counts one hook that failed at phase.
func (m *Metrics) CountHookFailure(obj *v1alpha1.Sync, phase string) {
	m.hookFailures.WithLabelValues(obj.Namespace, obj.Name, phase).Inc()
}

// ObserveStatus records the status a reconcile wrote: a Ready Sync was synced now.
func (m *Metrics) ObserveStatus(obj *v1alpha1.Sync, st v1alpha1.SyncStatus, now time.Time) {
	if !apimeta.IsStatusConditionTrue(st.Conditions, v1alpha1.ReadyCondition) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.synced[obj.Namespace+"/"+obj.Name] = now
}

// lastSynced is when a reconcile of this replica last found the Sync Ready.
func (m *Metrics) lastSynced(namespace, name string) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.synced[namespace+"/"+name]
}

// Forget deletes every series of a Sync that no longer exists.
func (m *Metrics) Forget(namespace, name string) {
	match := prometheus.Labels{"namespace": namespace, "name": name}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{m.duration, m.applied, m.drift, m.fights, m.rollbacks, m.hookRuns, m.hookFailures} {
		v.DeletePartialMatch(match)
	}
	m.mu.Lock()
	delete(m.synced, namespace+"/"+name)
	m.mu.Unlock()
	m.useURL(namespace+"/"+name, "")
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
