package sync_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	tethersync "tether.dev/tether/sync"
)

// listedSyncs is a cache holding a fixed list of Syncs, or failing.
type listedSyncs struct {
	client.Reader
	items []v1alpha1.Sync
	err   error
}

func (l *listedSyncs) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	if l.err != nil {
		return l.err
	}
	list.(*v1alpha1.SyncList).Items = l.items
	return nil
}

func stateSync(name string, suspend bool, status v1alpha1.SyncStatus) v1alpha1.Sync {
	return v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: v1alpha1.SyncSpec{Suspend: suspend}, Status: status}
}

func readyCondition(status metav1.ConditionStatus, reason string) []metav1.Condition {
	return []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: status, Reason: reason}}
}

// startCollector registers a StateCollector over syncs and starts it until the test ends.
func startCollector(t *testing.T, syncs *listedSyncs, m *tethersync.Metrics, elected <-chan struct{}) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	c := tethersync.NewStateCollector(syncs, m, elected, "tether.dev")
	reg.MustRegister(c)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("collector: %v", err)
		}
	})
	// Start has been entered once a scrape exports Syncs.
	deadline := time.Now().Add(10 * time.Second)
	for testutil.CollectAndCount(reg, "tether_sync_ready") == 0 && len(syncs.items) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the collector exported no Sync within 10s of Start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return reg
}

func TestStateCollectorExportsEverySyncFromItsStatus(t *testing.T) {
	applied := metav1.NewTime(time.Unix(1000, 0))
	syncs := &listedSyncs{items: []v1alpha1.Sync{
		stateSync("good", false, v1alpha1.SyncStatus{Sync: v1alpha1.SyncStatusSynced, Health: v1alpha1.HealthHealthy,
			LastAppliedRevision: "main@sha1:aaaa", LastAppliedTime: &applied, Conditions: readyCondition(metav1.ConditionTrue, v1alpha1.ReasonSucceeded)}),
		stateSync("broken", false, v1alpha1.SyncStatus{Sync: v1alpha1.SyncStatusOutOfSync, Health: v1alpha1.HealthHealthy,
			LastAppliedRevision: "main@sha1:aaaa", Conditions: readyCondition(metav1.ConditionFalse, v1alpha1.ReasonRenderFailed)}),
		stateSync("odd", true, v1alpha1.SyncStatus{Conditions: readyCondition(metav1.ConditionFalse, "SomethingNew")}),
		stateSync("new", false, v1alpha1.SyncStatus{}),
	}}
	syncs.items[1].Spec.Destination.Cluster = "prod-eu" // a remote cluster's Sync is labelled with it
	m := tethersync.NewMetrics(prometheus.NewRegistry(), tethersync.DefaultMetricsOptions())
	// This replica found "good" synced after its last apply.
	m.ObserveStatus(&syncs.items[0], syncs.items[0].Status, time.Unix(2000, 0))
	elected := make(chan struct{})
	reg := startCollector(t, syncs, m, elected)

	want := `
# HELP tether_last_sync_timestamp_seconds Unix time of the last reconcile that found the Sync's newest revision applied in full; absent until the first.
# TYPE tether_last_sync_timestamp_seconds gauge
tether_last_sync_timestamp_seconds{name="good",namespace="ns"} 2000
# HELP tether_leader 1 on the replica that holds the leader lease named by the lease label (and reconciles), 0 on a standby.
# TYPE tether_leader gauge
tether_leader{lease="tether.dev"} 0
# HELP tether_sync_failure 1 while the Sync's Ready condition is False, labelled with the condition's reason (a bounded set; Other for the rest) and the cluster the Sync applies to.
# TYPE tether_sync_failure gauge
tether_sync_failure{cluster="prod-eu",name="broken",namespace="ns",reason="RenderFailed"} 1
tether_sync_failure{cluster="in-cluster",name="odd",namespace="ns",reason="Other"} 1
# HELP tether_sync_info 1 for the current combination of sync status, health status and last applied revision of each Sync, and the cluster it applies to (in-cluster, a registered cluster's name, or secret/<name>).
# TYPE tether_sync_info gauge
tether_sync_info{cluster="prod-eu",health_status="Healthy",name="broken",namespace="ns",revision="main@sha1:aaaa",sync_status="OutOfSync"} 1
tether_sync_info{cluster="in-cluster",health_status="Healthy",name="good",namespace="ns",revision="main@sha1:aaaa",sync_status="Synced"} 1
tether_sync_info{cluster="in-cluster",health_status="Unknown",name="new",namespace="ns",revision="",sync_status="Unknown"} 1
tether_sync_info{cluster="in-cluster",health_status="Unknown",name="odd",namespace="ns",revision="",sync_status="Unknown"} 1
# HELP tether_sync_ready 1 when the Sync's Ready condition is True, 0 otherwise.
# TYPE tether_sync_ready gauge
tether_sync_ready{name="broken",namespace="ns"} 0
tether_sync_ready{name="good",namespace="ns"} 1
tether_sync_ready{name="new",namespace="ns"} 0
tether_sync_ready{name="odd",namespace="ns"} 0
# HELP tether_sync_suspended 1 when the Sync is suspended (spec.suspend), 0 otherwise.
# TYPE tether_sync_suspended gauge
tether_sync_suspended{name="broken",namespace="ns"} 0
tether_sync_suspended{name="good",namespace="ns"} 0
tether_sync_suspended{name="new",namespace="ns"} 0
tether_sync_suspended{name="odd",namespace="ns"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}

	t.Run("a standby exports the applied time from status alone", func(t *testing.T) {
		standby := startCollector(t, syncs, tethersync.NewMetrics(prometheus.NewRegistry(), tethersync.DefaultMetricsOptions()), make(chan struct{}))
		want := `
# HELP tether_last_sync_timestamp_seconds Unix time of the last reconcile that found the Sync's newest revision applied in full; absent until the first.
# TYPE tether_last_sync_timestamp_seconds gauge
tether_last_sync_timestamp_seconds{name="good",namespace="ns"} 1000
`
		if err := testutil.GatherAndCompare(standby, strings.NewReader(want), "tether_last_sync_timestamp_seconds"); err != nil {
			t.Error(err)
		}
	})
	t.Run("the leader says so", func(t *testing.T) {
		close(elected)
		if got := testutil.ToFloat64(leaderOnly{reg}); got != 1 {
			t.Errorf("tether_leader = %v, want 1", got)
		}
	})
	t.Run("a deleted Sync's series end with it", func(t *testing.T) {
		syncs.items = syncs.items[:1]
		if n := testutil.CollectAndCount(reg, "tether_sync_info"); n != 1 {
			t.Errorf("%d tether_sync_info series, want 1", n)
		}
	})
	t.Run("a cache that cannot be read fails the scrape", func(t *testing.T) {
		syncs.err = errors.New("cache not synced")
		if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "cache not synced") {
			t.Errorf("Gather error = %v, want the cache's error", err)
		}
	})
}

// leaderOnly collects tether_leader alone from a registry.
type leaderOnly struct{ reg *prometheus.Registry }

func (l leaderOnly) Describe(chan<- *prometheus.Desc) {}

func (l leaderOnly) Collect(ch chan<- prometheus.Metric) {
	families, _ := l.reg.Gather()
	for _, f := range families {
		if f.GetName() == "tether_leader" {
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc("tether_leader", "", nil, nil), prometheus.GaugeValue, f.GetMetric()[0].GetGauge().GetValue())
		}
	}
}

func TestFetchBucketsReachTheFetchTimeout(t *testing.T) {
	for _, timeout := range []time.Duration{5 * time.Minute, 45 * time.Second, 2 * time.Hour} {
		b := tethersync.FetchBuckets(timeout)
		if top := b[len(b)-1]; top != timeout.Seconds() {
			t.Errorf("FetchBuckets(%v) tops out at %vs", timeout, top)
		}
		for i := 1; i < len(b); i++ {
			if b[i] <= b[i-1] {
				t.Errorf("FetchBuckets(%v) not increasing: %v", timeout, b)
			}
		}
	}
}
