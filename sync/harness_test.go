package sync_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"

	tetheragent "tether.dev/tether/agent"
	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/source"
	tethersync "tether.dev/tether/sync"
	"tether.dev/tether/test/apicount"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/rig"
	"tether.dev/tether/test/workload"
)

func TestMain(m *testing.M) {
	source.ServeRenderWorker()
	ctrl.SetLogger(logr.Discard())
	os.Exit(controlplane.RunMain(m, controlplane.Options{}))
}

// waitTimeout guards every wait against hangs; it is not a performance assertion.
const waitTimeout = 90 * time.Second

// agent is the agent `tether controller` runs (test/rig), in process, with
// every request of its applies and of its manager counted, its Events recorded
// in memory and a hook in its applier.
type agent struct {
	*rig.Agent
	applies *apicount.Counter
	manager *apicount.Counter // the manager's client: Syncs and their status
	// recorder holds the Events the agent recorded.
	recorder *record.FakeRecorder
	// hooked runs a test's hook once, in the middle of the next apply.
	hooked *hookedApplier
}

// startAgent runs an agent until the test ends. With tenancy, Syncs act as the
// default service account it names, and reach only as far as it allows.
func startAgent(tb testing.TB, tenancy ...tethersync.TenancyOptions) *agent {
	tb.Helper()
	a := &agent{applies: &apicount.Counter{}, manager: &apicount.Counter{}, recorder: record.NewFakeRecorder(1000)}
	a.Agent = rig.Start(tb, rig.Options{
		Agent: func(o *tetheragent.Options) {
			o.Overrides.Recorder = a.recorder
			o.Overrides.Applier = func(applier tethersync.Applier) tethersync.Applier {
				a.hooked = &hookedApplier{Applier: applier}
				return a.hooked
			}
			for _, t := range tenancy {
				o.DefaultServiceAccount, o.AllowCrossNamespace = t.DefaultServiceAccount, t.AllowCrossNamespace
			}
		},
		ManagerConfig: a.manager.Wrap,
		ApplyConfig:   a.applies.Wrap,
		WaitTimeout:   waitTimeout,
	})
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
	harness.Must(tb, a.Client.Create(tb.Context(), s))
	return s
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

// apps and app are the benchmarks' workload: n apps of four objects, and one.
var apps, app = workload.Apps, workload.App
