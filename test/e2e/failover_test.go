package e2e

import (
	"context"
	"fmt"
	"slices"
	gosync "sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// failoverObjects is the size of the revision the leader is killed in the middle
// of: it takes the leader seconds to validate and write it, so a kill once a tenth
// of it exists lands mid-sync (the test fails, saying so, if it does not).
const failoverObjects = 500

// leaseName is the leader election Lease of every agent (LeaderElectionID).
const leaseName = "tether.dev"

// replica is one `tether controller` of a two-replica install, with the proxy
// that records its requests, so that a test can tell which replica wrote what.
type replica struct {
	*agent
	aud *auditor
}

func startReplica(t *testing.T, in *install) *replica {
	t.Helper()
	aud := startAuditor(t)
	return &replica{agent: startAgentWith(t, agentKubeconfig(t, aud), in.agentArgs(t)...), aud: aud}
}

// leaseWrite is a successful write of the leader election Lease.
func leaseWrite(r apiRequest) bool {
	return r.resource == "leases" && r.name == leaseName && (r.verb == "update" || r.verb == "create") && r.status < 300
}

// objectWrite is a successful apply of a ConfigMap of namespace ns.
func objectWrite(ns string) func(apiRequest) bool {
	return func(r apiRequest) bool {
		return r.resource == "configmaps" && r.namespace == ns && r.verb == "patch" && r.status < 300 && !r.dryRun
	}
}

// TestFailoverUnderFire installs deploy/install.yaml and runs two replicas of the
// agent with its ServiceAccount and leader election on, as the Deployment does.
// The leader is killed with SIGKILL in the middle of a sync of 500 objects: the
// standby takes the Lease when it expires and completes the sync, every object
// created once, none deleted or changed after. Then a third replica stands by and
// the leader is stopped with SIGTERM: it releases the Lease on its way out, and the
// standby takes it without waiting for it to expire.
//
// The failover times are logged, not asserted: quote them with the machine's load.
func TestFailoverUnderFire(t *testing.T) {
	if testing.Short() {
		t.Skip("kills the agent and waits out a Lease")
	}
	c := newClient(t)
	cp := controlplane.Shared(t)
	cs, err := kubernetes.NewForConfig(cp.Config())
	harness.Must(t, err)
	in := applyInstall(t, "install.yaml")
	ns := controlplane.NewNamespace(t, cp.Config())
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "failover")
	commit := repo.Commit(t, configMaps("cm", failoverObjects), fmt.Sprintf("%d config maps", failoverObjects))
	leases := recordLeases(t, cs)
	objects := recordConfigMaps(t, cs, ns)

	leader := startReplica(t, in)
	harness.Eventually(t, waitTimeout, "the first replica holds the Lease", func(context.Context) (bool, error) {
		_, ok := leader.aud.first(leaseWrite)
		return ok, nil
	})
	standby := startReplica(t, in)
	harness.Eventually(t, waitTimeout, "the second replica stands by (reads the Lease)", func(context.Context) (bool, error) {
		_, ok := standby.aud.first(func(r apiRequest) bool { return r.resource == "leases" && r.verb == "get" })
		return ok, nil
	})
	s := gitSync(ns, "failover", repo.URL(), "apps", time.Hour)
	createSync(t, c, s)

	var killed time.Time
	t.Run("SIGKILL mid-sync: the standby takes over and completes the sync", func(t *testing.T) {
		harness.Eventually(t, waitTimeout, "a tenth of the objects exist", func(context.Context) (bool, error) {
			return objects.added() >= failoverObjects/10, nil
		})
		leader.stop(t, syscall.SIGKILL)
		killed = time.Now()
		if n := objects.added(); n == failoverObjects {
			t.Fatalf("all %d objects existed when the leader was killed: this would test nothing", n)
		} else {
			t.Logf("killed the leader with %d of %d objects created", n, failoverObjects)
		}
		waitRevision(t, c, s, commit)
		acquired, ok := standby.aud.first(leaseWrite)
		firstWrite, wrote := standby.aud.first(objectWrite(ns))
		if !ok || !wrote {
			t.Fatalf("the Sync completed, but the standby never took the Lease (%v) or wrote an object (%v)", ok, wrote)
		}
		t.Logf("SIGKILL → standby holds the Lease: %v; → its first object write: %v",
			acquired.at.Sub(killed).Round(time.Millisecond), firstWrite.at.Sub(killed).Round(time.Millisecond))
		if leader.aud.count(objectWrite(ns)) == 0 {
			t.Errorf("the killed leader wrote no object: the standby did the whole sync, which tests nothing")
		}
	})

	t.Run("nothing lost, nothing created twice, nothing changed after its creation", func(t *testing.T) {
		if got := objects.names(watch.Added); len(got) != failoverObjects {
			t.Errorf("%d distinct config maps created, want %d", len(got), failoverObjects)
		}
		for _, typ := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted} {
			for name, n := range objects.names(typ) {
				if typ != watch.Added || n > 1 {
					t.Errorf("ConfigMap %s: %d %s events, want one ADDED and nothing else", name, n, typ)
				}
			}
		}
		if got := len(labelledConfigMaps(t, c, s)); got != failoverObjects {
			t.Errorf("%d config maps carry the Sync's label, want %d", got, failoverObjects)
		}
	})

	third := startReplica(t, in) // started here: it runs until the test ends
	t.Run("SIGTERM: the leader releases the Lease and a standby takes it at once", func(t *testing.T) {
		harness.Eventually(t, waitTimeout, "the third replica stands by (reads the Lease)", func(context.Context) (bool, error) {
			_, ok := third.aud.first(func(r apiRequest) bool { return r.resource == "leases" && r.verb == "get" })
			return ok, nil
		})
		standby.stop(t, syscall.SIGTERM)
		stopped := time.Now()
		harness.Eventually(t, waitTimeout, "the third replica holds the Lease", func(context.Context) (bool, error) {
			_, ok := third.aud.first(leaseWrite)
			return ok, nil
		})
		acquired, _ := third.aud.first(leaseWrite)
		if !leases.released() {
			t.Errorf("no version of the Lease was released (held by no one): SIGTERM did not release it; holders seen: %v", leases.holders())
		}
		t.Logf("SIGTERM'd leader exited → standby holds the Lease: %v", acquired.at.Sub(stopped).Round(time.Millisecond))
	})

	t.Run("the new leader reconciles: drift is corrected by watch", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm-042"}}
		harness.Must(t, c.Patch(t.Context(), cm, client.RawPatch(types.MergePatchType, []byte(`{"data":{"index":"drifted"}}`)), client.FieldOwner("e2e-drift")))
		harness.Eventually(t, waitTimeout, "the drift is corrected", func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm)
			return err == nil && cm.Data["index"] == "42", err
		})
	})

	// Also leaves no Sync behind for a later test's agent to finalize.
	t.Run("the new leader runs the Sync's finalizer: deleting it deletes its objects", func(t *testing.T) {
		harness.Must(t, c.Delete(t.Context(), s))
		waitGone(t, c, s)
		if left := labelledConfigMaps(t, c, s); len(left) != 0 {
			t.Errorf("%d config maps left after the Sync was deleted", len(left))
		}
	})
}

// leaseLog records every version of the leader election Lease of tether-system.
type leaseLog struct {
	events *eventLog[*coordinationv1.Lease]
}

func recordLeases(t *testing.T, cs kubernetes.Interface) *leaseLog {
	t.Helper()
	w, err := cs.CoordinationV1().Leases(agentNamespace).Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + leaseName})
	harness.Must(t, err)
	return &leaseLog{events: recordEvents[*coordinationv1.Lease](t, w)}
}

// released reports whether some version of the Lease was held by no one: what a
// leader that releases it on its way out (ReleaseOnCancel) leaves.
func (l *leaseLog) released() bool {
	for _, e := range l.events.all() {
		if e.obj.Spec.HolderIdentity == nil || *e.obj.Spec.HolderIdentity == "" {
			return true
		}
	}
	return false
}

func (l *leaseLog) holders() []string {
	var out []string
	for _, e := range l.events.all() {
		if h := e.obj.Spec.HolderIdentity; h != nil && (len(out) == 0 || out[len(out)-1] != *h) {
			out = append(out, *h)
		}
	}
	return out
}

// configMapLog records every ConfigMap event of one namespace.
type configMapLog struct {
	events *eventLog[*corev1.ConfigMap]
}

func recordConfigMaps(t *testing.T, cs kubernetes.Interface, ns string) *configMapLog {
	t.Helper()
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(t.Context(), metav1.ListOptions{})
	harness.Must(t, err)
	return &configMapLog{events: recordEvents[*corev1.ConfigMap](t, w)}
}

// added is how many ConfigMaps were created so far.
func (l *configMapLog) added() int { return len(l.names(watch.Added)) }

// names counts the events of type typ by object name.
func (l *configMapLog) names(typ watch.EventType) map[string]int {
	out := map[string]int{}
	for _, e := range l.events.all() {
		if e.typ == typ && e.obj.Name != "kube-root-ca.crt" {
			out[e.obj.Name]++
		}
	}
	return out
}

// event is one event of a watch, as the test saw it.
type event[T any] struct {
	typ watch.EventType
	obj T
}

// eventLog keeps every event of one watch until the test ends.
type eventLog[T any] struct {
	mu     gosync.Mutex
	events []event[T]
}

func recordEvents[T any](t *testing.T, w watch.Interface) *eventLog[T] {
	t.Helper()
	l := &eventLog[T]{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range w.ResultChan() {
			if obj, ok := e.Object.(T); ok {
				l.mu.Lock()
				l.events = append(l.events, event[T]{typ: e.Type, obj: obj})
				l.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return l
}

func (l *eventLog[T]) all() []event[T] {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}
