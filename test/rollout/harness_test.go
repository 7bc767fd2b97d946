package rollout

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tetheragent "tether.dev/tether/agent"
	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	tethersync "tether.dev/tether/sync"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/rig"
)

func TestMain(m *testing.M) {
	source.ServeRenderWorker()
	ctrl.SetLogger(logr.Discard())
	os.Exit(controlplane.RunMain(m, controlplane.Options{Workloads: true}))
}

// waitTimeout guards every wait against hangs; it is not a performance assertion.
const waitTimeout = 2 * time.Minute

// agentOptions vary the agent between the tests and the benchmark's baseline.
type agentOptions struct {
	// ignoreStatus is Tether before health followed the cluster: status changes
	// are dropped and health is re-assessed by the progressing requeue alone.
	ignoreStatus bool
	// onlyUnsettledStatus is Tether before the status of Healthy workloads was
	// followed: a Healthy object turning Degraded is told at the interval.
	onlyUnsettledStatus bool
}

// agent is the agent `tether controller` runs (test/rig), in process, with
// Events recorded through the API server and every request it sends counted.
type agent struct {
	*rig.Agent
	// requests counts the requests the agent sent the API server.
	requests *atomic.Int64
}

func startAgent(tb testing.TB, opts agentOptions) *agent {
	tb.Helper()
	a := &agent{requests: &atomic.Int64{}}
	// Every request of the agent (watches included, counted once) is counted; the
	// test's own client is not.
	counted := func(cfg *rest.Config) *rest.Config {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, a.requests} })
		return cfg
	}
	a.Agent = rig.Start(tb, rig.Options{
		Agent: func(o *tetheragent.Options) {
			o.Overrides.Watcher = tethersync.WatcherOptions{IgnoreStatus: opts.ignoreStatus, OnlyUnsettledStatus: opts.onlyUnsettledStatus}
		},
		ManagerConfig: counted,
		ApplyConfig:   counted,
		WaitTimeout:   waitTimeout,
	})
	return a
}

type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.next.RoundTrip(r)
}

// reconciles returns how many reconciles of Syncs in namespace ns the agent has
// finished.
func (a *agent) reconciles(tb testing.TB, ns string) uint64 {
	tb.Helper()
	families, err := a.Registry.Gather()
	harness.Must(tb, err)
	var n uint64
	for _, f := range families {
		if f.GetName() != "tether_reconcile_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "namespace" && l.GetValue() == ns {
					n += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return n
}

// newSync creates a Sync of repo's main branch at path "app" into namespace ns.
// Its interval is an hour: only the cluster (the watches) and the progressing
// requeue make it look again.
func (a *agent) newSync(tb testing.TB, ns string, repo *gitserver.Repo, mutate ...func(*v1alpha1.Sync)) *v1alpha1.Sync {
	tb.Helper()
	s := &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: v1alpha1.SyncSpec{
			Source: v1alpha1.SourceSpec{
				URL: repo.FileURL(), Ref: v1alpha1.GitRef{Branch: "main"}, Path: "app",
				Interval: &metav1.Duration{Duration: time.Hour},
			},
			Destination: v1alpha1.DestinationSpec{Namespace: ns},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	harness.Must(tb, a.Client.Create(tb.Context(), s))
	return s
}

// waitHealth waits until the Sync has applied commit and its health is code.
func (a *agent) waitHealth(tb testing.TB, s *v1alpha1.Sync, commit string, code v1alpha1.HealthStatusCode) *v1alpha1.Sync {
	tb.Helper()
	return a.WaitFor(tb, s, fmt.Sprintf("%s at %.12s", code, commit), func(s *v1alpha1.Sync) bool {
		return strings.HasSuffix(s.Status.LastAppliedRevision, commit) && s.Status.Health == code
	})
}

// events returns the reasons of the Events recorded on the Sync, oldest first, as
// "<type>/<reason>", each repeated as many times as it was recorded.
func (a *agent) events(tb testing.TB, s *v1alpha1.Sync) []event {
	tb.Helper()
	list := &corev1.EventList{}
	harness.Must(tb, a.Client.List(tb.Context(), list, client.InNamespace(s.Namespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("involvedObject.name", s.Name)}))
	var out []event
	for _, e := range list.Items {
		for range max(e.Count, 1) {
			out = append(out, event{Type: e.Type, Reason: e.Reason, Message: e.Message})
		}
	}
	return out
}

// event is what a user sees of an Event. Events come listed by name, which the
// recorder makes of the object's name and the time: oldest first.
type event struct {
	Type, Reason, Message string
}

// healthEvents keeps the Events of health transitions.
func healthEvents(events []event) []event {
	var out []event
	for _, e := range events {
		switch e.Reason {
		case v1alpha1.ReasonHealthy, v1alpha1.ReasonProgressing, v1alpha1.ReasonDegraded, v1alpha1.ReasonSuspended, v1alpha1.ReasonMissing:
			out = append(out, e)
		}
	}
	return out
}

// statusLog records every status the Sync's watch delivers, so that a test can
// check the states a Sync went through, however briefly it was in them.
type statusLog struct {
	mu   gosync.Mutex
	seen []v1alpha1.SyncStatus
}

// recordStatuses watches s until the test ends.
func (a *agent) recordStatuses(tb testing.TB, s *v1alpha1.Sync) *statusLog {
	tb.Helper()
	cfg := controlplane.Shared(tb).Config()
	scheme := runtime.NewScheme()
	harness.Must(tb, v1alpha1.AddToScheme(scheme))
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	harness.Must(tb, err)
	w, err := wc.Watch(tb.Context(), &v1alpha1.SyncList{}, client.InNamespace(s.Namespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", s.Name)})
	harness.Must(tb, err)
	log := &statusLog{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range w.ResultChan() {
			if got, ok := e.Object.(*v1alpha1.Sync); ok {
				log.mu.Lock()
				log.seen = append(log.seen, got.Status)
				log.mu.Unlock()
			}
		}
	}()
	tb.Cleanup(func() { w.Stop(); <-done })
	return log
}

// find returns the first status recorded that satisfies cond.
func (l *statusLog) find(cond func(v1alpha1.SyncStatus) bool) (v1alpha1.SyncStatus, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.seen {
		if cond(s) {
			return s, true
		}
	}
	return v1alpha1.SyncStatus{}, false
}

// resource returns the entry of status.resources for kind/name.
func resource(s v1alpha1.SyncStatus, kind, name string) (v1alpha1.ResourceStatus, bool) {
	for _, r := range s.Resources {
		if r.Kind == kind && r.Name == name {
			return r, true
		}
	}
	return v1alpha1.ResourceStatus{}, false
}

// healthOf returns the health of kind/name: status.resources lists the objects
// with something to say, and an object it leaves out is Synced and Healthy.
func healthOf(s v1alpha1.SyncStatus, kind, name string) v1alpha1.HealthStatusCode {
	if r, ok := resource(s, kind, name); ok && r.Health != "" {
		return r.Health
	}
	return v1alpha1.HealthHealthy
}

func condition(s v1alpha1.SyncStatus, condType string) *metav1.Condition {
	return apimeta.FindStatusCondition(s.Conditions, condType)
}
