package sync

import (
	"time"

	gosync "sync"

	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/source"
)

// Metrics are the Prometheus series Tether exports about Syncs (see DESIGN.md). The
// alerts shipped in deploy/monitoring are written against these names and labels.
type Metrics struct {
	info          *prometheus.GaugeVec
	ready         *prometheus.GaugeVec
	duration      *prometheus.HistogramVec
	lastSync      *prometheus.GaugeVec
	applied       *prometheus.CounterVec
	fetchDuration *prometheus.HistogramVec
	fetchErrors   *prometheus.CounterVec
	drift         *prometheus.CounterVec
	fights        *prometheus.CounterVec
	suspended     *prometheus.GaugeVec

	mu gosync.Mutex
	// infoLabels remembers each Sync's current tether_sync_info series, so the old
	// one is deleted when the combination changes: exactly one series is 1 per Sync.
	infoLabels map[string]prometheus.Labels
	// fetchURL remembers the (redacted) URL each Sync last fetched, so that the
	// series of a URL are deleted when no Sync fetches it any more: the url label
	// cannot grow without bound as Syncs come, go and change repositories.
	fetchURL map[string]string
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tether_sync_info",
			Help: "1 for the current combination of sync status, health status and revision of each Sync.",
		}, []string{"namespace", "name", "sync_status", "health_status", "revision"}),
		ready: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tether_sync_ready",
			Help: "1 when the Sync's Ready condition is True, 0 otherwise.",
		}, []string{"namespace", "name"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tether_reconcile_duration_seconds",
			Help:    "Time one reconcile of a Sync took.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"namespace", "name"}),
		lastSync: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tether_last_sync_timestamp_seconds",
			Help: "Unix time of the last reconcile that applied the Sync's revision in full.",
		}, []string{"namespace", "name"}),
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tether_apply_objects_total",
			Help: "Objects applied, by outcome (created, configured, unchanged, pruned, failed).",
		}, []string{"namespace", "name", "action"}),
		fetchDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tether_git_fetch_duration_seconds",
			Help:    "Time to resolve a ref and fetch its commit.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10),
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
		suspended: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tether_sync_suspended",
			Help: "1 when the Sync is suspended (spec.suspend), 0 otherwise.",
		}, []string{"namespace", "name"}),
		infoLabels: map[string]prometheus.Labels{},
		fetchURL:   map[string]string{},
	}
	reg.MustRegister(m.info, m.ready, m.duration, m.lastSync, m.applied, m.fetchDuration, m.fetchErrors, m.drift, m.fights, m.suspended)
	return m
}

// ObserveReconcile records how long one reconcile took.
func (m *Metrics) ObserveReconcile(obj *v1alpha1.Sync, d time.Duration) {
	m.duration.WithLabelValues(obj.Namespace, obj.Name).Observe(d.Seconds())
}

// ObserveFetch records one git fetch of obj's repository. URLs lose any
// credentials before they become label values.
func (m *Metrics) ObserveFetch(obj *v1alpha1.Sync, d time.Duration, err error) {
	url := source.RedactURL(obj.Spec.Source.URL)
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

// ObserveStatus exports the status a reconcile wrote.
func (m *Metrics) ObserveStatus(obj *v1alpha1.Sync, st v1alpha1.SyncStatus, now time.Time) {
	m.suspended.WithLabelValues(obj.Namespace, obj.Name).Set(boolFloat(obj.Spec.Suspend))
	ready := apimeta.IsStatusConditionTrue(st.Conditions, v1alpha1.ReadyCondition)
	m.ready.WithLabelValues(obj.Namespace, obj.Name).Set(boolFloat(ready))
	if ready {
		m.lastSync.WithLabelValues(obj.Namespace, obj.Name).Set(float64(now.Unix()))
	}
	labels := prometheus.Labels{
		"namespace": obj.Namespace, "name": obj.Name,
		"sync_status": string(st.Sync), "health_status": string(st.Health), "revision": st.LastAppliedRevision,
	}
	key := obj.Namespace + "/" + obj.Name
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.infoLabels[key]; ok && !equalLabels(old, labels) {
		m.info.Delete(old)
	}
	m.info.With(labels).Set(1)
	m.infoLabels[key] = labels
}

// Forget deletes every series of a Sync that no longer exists.
func (m *Metrics) Forget(namespace, name string) {
	match := prometheus.Labels{"namespace": namespace, "name": name}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{m.info, m.ready, m.duration, m.lastSync, m.applied, m.drift, m.fights, m.suspended} {
		v.DeletePartialMatch(match)
	}
	m.mu.Lock()
	delete(m.infoLabels, namespace+"/"+name)
	m.mu.Unlock()
	m.useURL(namespace+"/"+name, "")
}

func equalLabels(a, b prometheus.Labels) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
