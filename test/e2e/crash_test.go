package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/faultproxy"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// newObjects is how many objects the interrupted revision creates.
const newObjects = 150

// laterWriteOfNew matches the writes (not the dry-runs) of the interrupted
// revision's ConfigMaps in ns but its first, new-000.
func laterWriteOfNew(ns string) func(*http.Request) bool {
	prefix := "/api/v1/namespaces/" + ns + "/configmaps/new-"
	return func(r *http.Request) bool {
		return r.Method == http.MethodPatch && strings.HasPrefix(r.URL.Path, prefix) &&
			r.URL.Path != prefix+"000" && r.URL.Query().Get("dryRun") == ""
	}
}

func configMaps(prefix string, n int) map[string]string {
	files := map[string]string{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%03d", prefix, i)
		files["apps/"+name+".yaml"] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {index: \"%d\"}\n", name, i)
	}
	return files
}

// TestAnInterruptedApplyLosesNoObject stops the agent while it creates the objects
// of a new revision, before it can write its final status; a later commit removes
// those objects. Whatever the signal, every object in the cluster that carries the
// Sync's label is in its inventory the moment the agent is gone (write-ahead), the
// restarted agent prunes them, and deleting the Sync removes the rest.
func TestAnInterruptedApplyLosesNoObject(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) { interruptedApply(t, sig) })
	}
}

func interruptedApply(t *testing.T, sig syscall.Signal) {
	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{})
	repo := git.CreateRepo(t, "deploy")
	first := repo.Commit(t, configMaps("base", 3), "three config maps")
	// The agent talks to the API server through the fault proxy, which holds the
	// new revision's writes after its first for ten seconds: the agent is surely
	// still writing when the test, having seen the first, stops it.
	proxy := faultproxy.Start(t, controlplane.Shared(t).Config(), 1)
	a := startAgentWith(t, proxy.Kubeconfig(t, t.TempDir()))
	s := gitSync(ns, "crash", repo.URL(), "apps", 2*time.Second)
	s.Spec.PruneLimit = ptrIntOrString("100%")
	createSync(t, c, s)
	waitRevision(t, c, s, first)

	proxy.SetRules(faultproxy.Rule{Match: laterWriteOfNew(ns), Rate: 1, Fault: faultproxy.Slow, Delay: 10 * time.Second})
	repo.Commit(t, configMaps("new", newObjects), "many new config maps")
	harness.Eventually(t, waitTimeout, "the first object of the new revision exists", func(ctx context.Context) (bool, error) {
		return true, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "new-000"}, &corev1.ConfigMap{})
	})
	a.stop(t, sig)

	t.Run("every labelled object is in the inventory", func(t *testing.T) {
		got := &v1alpha1.Sync{}
		harness.Must(t, c.Get(t.Context(), client.ObjectKeyFromObject(s), got))
		labelled := labelledConfigMaps(t, c, s)
		var missing []string
		for _, name := range labelled {
			ref := v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: name}
			if !slices.Contains(plan.Inventory(got.Status), ref) {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			t.Errorf("%d of %d objects in the cluster are in no inventory: %v", len(missing), len(labelled), missing)
		}
		if !strings.HasSuffix(got.Status.LastAppliedRevision, first) {
			t.Errorf("lastAppliedRevision = %s: the agent finished the revision before it was stopped, so this tested nothing", got.Status.LastAppliedRevision)
		}
		t.Logf("stopped with %d of %d new objects created", len(labelled)-3, newObjects)
	})

	removal := configMaps("new", newObjects)
	for name := range removal {
		removal[name] = ""
	}
	third := repo.Commit(t, removal, "remove the new config maps")
	startAgent(t)
	t.Run("a restarted agent prunes what the next commit removes", func(t *testing.T) {
		waitRevision(t, c, s, third)
		if got := labelledConfigMaps(t, c, s); !slices.Equal(got, []string{"base-000", "base-001", "base-002"}) {
			t.Errorf("config maps left = %v, want only the three base ones", got)
		}
	})

	t.Run("deleting the Sync removes the rest", func(t *testing.T) {
		harness.Must(t, c.Delete(t.Context(), s))
		waitGone(t, c, s)
		if got := labelledConfigMaps(t, c, s); len(got) != 0 {
			t.Errorf("config maps left after the Sync was deleted: %v", got)
		}
	})
}

// labelledConfigMaps lists, sorted, the names of the ConfigMaps that carry the
// label of Sync s.
func labelledConfigMaps(t *testing.T, c client.Client, s *v1alpha1.Sync) []string {
	t.Helper()
	var names []string
	for _, cm := range syncConfigMaps(t, c, s) {
		names = append(names, cm.Name)
	}
	return names
}

// gitSync is a Sync of path at url's main branch into namespace ns, polling every
// interval.
func gitSync(ns, name, url, path string, interval time.Duration) *v1alpha1.Sync {
	return &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.SyncSpec{
			Source: v1alpha1.SourceSpec{
				URL: url, Ref: v1alpha1.GitRef{Branch: "main"}, Path: path,
				Interval: &metav1.Duration{Duration: interval},
			},
			Destination: v1alpha1.DestinationSpec{Namespace: ns},
		},
	}
}

// createSync creates Sync s and, when the test ends (before the agents started
// earlier stop), deletes it and waits until its finalizer has run, so that no Sync
// of this test is left for the agents of later tests in the shared cluster.
func createSync(t *testing.T, c client.Client, s *v1alpha1.Sync) {
	t.Helper()
	harness.Must(t, c.Create(t.Context(), s))
	t.Cleanup(func() {
		if err := c.Delete(context.WithoutCancel(t.Context()), s); client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting Sync %s: %v", s.Name, err)
			return
		}
		waitGone(t, c, s)
	})
}

// waitGone waits until Sync s no longer exists: its finalizer has done its work.
func waitGone(t testing.TB, c client.Client, s *v1alpha1.Sync) {
	t.Helper()
	harness.Eventually(t, waitTimeout, "the Sync "+s.Name+" is gone", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(s), &v1alpha1.Sync{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// waitRevision waits until the Sync is Ready at commit.
func waitRevision(t testing.TB, c client.Client, s *v1alpha1.Sync, commit string) {
	t.Helper()
	waitRevisionWithin(t, c, s, commit, waitTimeout)
}

// waitRevisionWithin waits at most timeout until the Sync is Ready at commit.
func waitRevisionWithin(t testing.TB, c client.Client, s *v1alpha1.Sync, commit string, timeout time.Duration) {
	t.Helper()
	harness.Eventually(t, timeout, "the Sync is Ready at "+commit, func(ctx context.Context) (bool, error) {
		got := &v1alpha1.Sync{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
			return false, err
		}
		ready := apimeta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ReadyCondition)
		return ready && strings.HasSuffix(got.Status.LastAppliedRevision, commit), nil
	})
}

func ptrIntOrString(v string) *intstr.IntOrString {
	x := intstr.FromString(v)
	return &x
}
