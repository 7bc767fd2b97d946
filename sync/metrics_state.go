package sync

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

// StateCollector exports the state of every Sync, read from the manager's cache at
// scrape time: tether_sync_info, tether_sync_ready, tether_sync_suspended,
// tether_sync_failure and tether_last_sync_timestamp_seconds, and tether_leader
// for the replica itself.
//
// Every replica runs it, leader or not, and all of them export the same series for
// the same Sync: they read the same status. So a scrape of the standby says as much
// as one of the leader, a new leader takes over with no gap in the series, and a
// deleted Sync's series end with the Sync, with nothing to forget. Alerts aggregate
// the replicas with `max by (namespace, name)`.
type StateCollector struct {
	syncs   client.Reader
	metrics *Metrics
	elected <-chan struct{}
	lease   string
	// ctx is the context Start runs with; until Start, Collect exports only
	// tether_leader.
	ctx atomic.Pointer[context.Context]
	now func() time.Time

	info, ready, suspended, failure, lastSync, leader *prometheus.Desc
}

var (
	_ prometheus.Collector           = (*StateCollector)(nil)
	_ manager.LeaderElectionRunnable = (*StateCollector)(nil)
)

// scrapeListTimeout bounds the cache read of one scrape: long enough for a fresh
// replica's cache to sync, short enough for Prometheus's scrape timeout.
const scrapeListTimeout = 5 * time.Second

// NewStateCollector returns a collector that lists Syncs through syncs (the
// manager's cache), takes the last-synced times of metrics, and reports itself the
// leader of lease (the leader election Lease's name, one per shard) once elected
// is closed (mgr.Elected()). Register it with the metrics registry and add it to
// the manager (its Start lets scrapes read the cache).
func NewStateCollector(syncs client.Reader, metrics *Metrics, elected <-chan struct{}, lease string) *StateCollector {
	syncLabels := []string{"namespace", "name"}
	return &StateCollector{
		syncs: syncs, metrics: metrics, elected: elected, lease: lease, now: time.Now,
		info: prometheus.NewDesc("tether_sync_info",
			"1 for the current combination of sync status, health status and last applied revision of each Sync, and the cluster it applies to (in-cluster, a registered cluster's name, or secret/<name>).",
			[]string{"namespace", "name", "sync_status", "health_status", "revision", "cluster"}, nil),
		ready: prometheus.NewDesc("tether_sync_ready",
			"1 when the Sync's Ready condition is True, 0 otherwise.", syncLabels, nil),
		suspended: prometheus.NewDesc("tether_sync_suspended",
			"1 when the Sync is suspended (spec.suspend), 0 otherwise.", syncLabels, nil),
		failure: prometheus.NewDesc("tether_sync_failure",
			"1 while the Sync's Ready condition is False, labelled with the condition's reason (a bounded set; Other for the rest) and the cluster the Sync applies to.",
			[]string{"namespace", "name", "reason", "cluster"}, nil),
		lastSync: prometheus.NewDesc("tether_last_sync_timestamp_seconds",
			"Unix time of the last reconcile that found the Sync's newest revision applied in full; absent until the first.",
			syncLabels, nil),
		leader: prometheus.NewDesc("tether_leader",
			"1 on the replica that holds the leader lease named by the lease label (and reconciles), 0 on a standby.", []string{"lease"}, nil),
	}
}

// Start lets scrapes read the cache until ctx ends. It lists Syncs once at once,
// so that the cache starts watching them on a standby too, before the first scrape.
func (c *StateCollector) Start(ctx context.Context) error {
	c.ctx.Store(&ctx)
	if err := c.syncs.List(ctx, &v1alpha1.SyncList{}); err != nil && ctx.Err() == nil {
		return fmt.Errorf("listing Syncs for metrics: %w", err)
	}
	<-ctx.Done()
	return nil
}

// NeedLeaderElection is false: every replica exports the state of every Sync.
func (c *StateCollector) NeedLeaderElection() bool { return false }

// Describe sends the descriptors of every series.
func (c *StateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.info, c.ready, c.suspended, c.failure, c.lastSync, c.leader} {
		ch <- d
	}
}

// Collect sends the state of every Sync in the cache. A cache that cannot be read
// fails the scrape (an invalid metric), rather than exporting no Syncs: an empty
// answer would look like nothing is wrong.
func (c *StateCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.leader, prometheus.GaugeValue, boolFloat(c.isLeader()), c.lease)
	started := c.ctx.Load()
	if started == nil {
		return
	}
	ctx, cancel := context.WithTimeout(*started, scrapeListTimeout)
	defer cancel()
	// The Syncs are read, never changed: the cache's own, not a deep copy of each
	// (1,000 Syncs were 5-8 MB allocated at every scrape).
	list := &v1alpha1.SyncList{}
	if err := c.syncs.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(c.info, fmt.Errorf("listing Syncs from the cache: %w", err))
		return
	}
	for i := range list.Items {
		c.collectSync(ch, &list.Items[i])
	}
}

func (c *StateCollector) collectSync(ch chan<- prometheus.Metric, s *v1alpha1.Sync) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{s.Namespace, s.Name}, labels...)...)
	}
	syncStatus, health := s.Status.Sync, s.Status.Health
	if syncStatus == "" {
		syncStatus = v1alpha1.SyncStatusUnknown
	}
	if health == "" {
		health = v1alpha1.HealthUnknown
	}
	cluster := s.Spec.Destination.ClusterName()
	gauge(c.info, 1, string(syncStatus), string(health), s.Status.LastAppliedRevision, cluster)
	ready := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
	gauge(c.ready, boolFloat(ready != nil && ready.Status == metav1.ConditionTrue))
	gauge(c.suspended, boolFloat(s.Spec.Suspend))
	if ready != nil && ready.Status == metav1.ConditionFalse {
		gauge(c.failure, 1, plan.FailureReason(ready.Reason), cluster)
	}
	last := c.metrics.lastSynced(s.Namespace, s.Name)
	if t := s.Status.LastAppliedTime; t != nil && t.After(last) {
		last = t.Time
	}
	if !last.IsZero() {
		gauge(c.lastSync, float64(last.Unix()))
	}
}

func (c *StateCollector) isLeader() bool {
	select {
	case <-c.elected:
		return true
	default:
		return false
	}
}
