package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/faultproxy"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// faultsFullEnv set to 1 runs the fault suite at full size (`make test-faults`);
// otherwise `make test` runs a reduced version.
const faultsFullEnv = "TETHER_FAULTS_FULL"

// faultScale is the size of a fault run.
type faultScale struct {
	syncs, objects int
	window         time.Duration
	// after is how long Syncs may take to converge once the faults stop; zero means
	// they must converge while the faults last. The full run writes 2,050 objects,
	// three requests each, on a 2-core machine: more than its fault window may hold.
	after time.Duration
}

func scaleOfFaults() faultScale {
	if os.Getenv(faultsFullEnv) == "1" {
		return faultScale{syncs: 50, objects: 20, window: 60 * time.Second, after: 3 * time.Minute}
	}
	return faultScale{syncs: 8, objects: 10, window: 30 * time.Second}
}

// apiFaults fail about 20% of the agent's requests: throttling with Retry-After,
// server errors, resets, slow answers, conflicts on status writes, and cut watches.
func apiFaults() []faultproxy.Rule {
	return []faultproxy.Rule{
		{Match: faultproxy.IsStatusWrite, Rate: 0.2, Fault: faultproxy.Conflict},
		{Rate: 0.2, Fault: faultproxy.DropWatch},
		{Rate: 0.05, Fault: faultproxy.TooManyRequests, RetryAfter: time.Second},
		{Rate: 0.05, Fault: faultproxy.InternalError},
		{Rate: 0.05, Fault: faultproxy.Unavailable},
		{Rate: 0.03, Fault: faultproxy.Reset},
		{Rate: 0.02, Fault: faultproxy.Slow, Delay: 2 * time.Second},
	}
}

// TestTheAgentConvergesThroughAPIServerFaults runs the real agent through a proxy
// that fails about a fifth of its requests while Syncs are created and a commit
// changes and removes objects; once the faults stop, every Sync converges to git,
// and nothing git declares was ever deleted.
func TestTheAgentConvergesThroughAPIServerFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the agent through a fault window")
	}
	size := scaleOfFaults()
	c := newClient(t)
	cp := controlplane.Shared(t)
	ns := controlplane.NewNamespace(t, cp.Config())
	git := gitserver.Start(t, gitserver.Options{})
	repo := git.CreateRepo(t, "faults")
	files := map[string]string{}
	for i := 0; i < size.syncs; i++ {
		maps.Copy(files, faultConfigMaps(i, size.objects, "v1"))
	}
	repo.Commit(t, files, "every Sync's config maps")

	proxy := faultproxy.Start(t, cp.Config(), 1)
	proxy.SetRules(apiFaults()...)
	faultStart := time.Now()
	startAgentWith(t, proxy.Kubeconfig(t, t.TempDir()))
	var syncs []*v1alpha1.Sync
	for i := 0; i < size.syncs; i++ {
		s := gitSync(ns, fmt.Sprintf("s%02d", i), repo.URL(), fmt.Sprintf("apps/s%02d", i), 2*time.Second)
		createSync(t, c, s)
		syncs = append(syncs, s)
	}
	// Once the agent has taken up every Sync under the faults (each carries the
	// finalizer), a commit changes every object and removes one per Sync.
	harness.Eventually(t, waitTimeout, "every Sync is taken up", func(ctx context.Context) (bool, error) {
		for _, s := range syncs {
			got := &v1alpha1.Sync{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil || len(got.Finalizers) == 0 {
				return false, err
			}
		}
		return true, nil
	})
	committed := time.Now()
	files = map[string]string{}
	for i := 0; i < size.syncs; i++ {
		maps.Copy(files, faultConfigMaps(i, size.objects, "v2"))
		files[fmt.Sprintf("apps/s%02d/cm-%02d.yaml", i, size.objects-1)] = ""
	}
	last := repo.Commit(t, files, "change every object, remove one per Sync")
	converged := allReadyBy(t, c, syncs, last, faultStart.Add(size.window))
	proxy.SetRules()
	faultEnd := time.Now()
	during := proxy.Log()
	if converged.IsZero() && size.after > 0 {
		converged = allReadyBy(t, c, syncs, last, faultEnd.Add(size.after))
	}

	t.Run(fmt.Sprintf("every Sync converges within %v of the faults' end", size.after), func(t *testing.T) {
		if converged.IsZero() {
			t.Errorf("not every Sync was Ready at %s %v after the %v fault window ended", last, size.after, size.window)
		} else {
			t.Logf("converged %v after the faults stopped (negative: while they lasted)", converged.Sub(faultEnd).Round(time.Millisecond))
		}
	})
	for _, s := range syncs {
		waitRevision(t, c, s, last)
	}

	t.Run("the cluster equals git, object by object", func(t *testing.T) {
		for i, s := range syncs {
			want := map[string]string{}
			for j := 0; j < size.objects-1; j++ {
				want[fmt.Sprintf("s%02d-cm-%02d", i, j)] = "v2"
			}
			got := map[string]string{}
			for _, cm := range syncConfigMaps(t, c, s) {
				got[cm.Name] = cm.Data["version"]
			}
			if !maps.Equal(want, got) {
				t.Errorf("Sync %s: config maps %v, want %v", s.Name, got, want)
			}
		}
	})

	t.Run("nothing that git declares was deleted", func(t *testing.T) {
		for _, e := range faultproxy.Writes(proxy.Log()) {
			if e.Method != http.MethodDelete || !strings.Contains(e.Path, "/configmaps/") {
				continue
			}
			name := e.Path[strings.LastIndex(e.Path, "/")+1:]
			if !strings.HasSuffix(name, fmt.Sprintf("-cm-%02d", size.objects-1)) {
				t.Errorf("wrongful delete: %s %s", e.Method, e.Path)
			}
		}
	})

	t.Run("a request that got a 429 waits out its Retry-After", func(t *testing.T) {
		injected, total := 0, 0
		kinds := map[string]int{}
		for _, e := range during {
			if e.Time.Before(faultEnd) {
				total++
				kinds[requestKind(e)]++
				if e.Fault != "" {
					injected++
				}
			}
		}
		t.Logf("%d Syncs of %d objects: %d requests in the %v fault window (%.1f/s), %d faults injected; converged %v after the commit",
			size.syncs, size.objects, total, size.window, float64(total)/faultEnd.Sub(faultStart).Seconds(), injected, converged.Sub(committed).Round(time.Millisecond))
		t.Logf("requests by kind during the faults: %v", kinds)
		// No hot loop: the agent has no client-side limit, so only its backoff keeps
		// it from retrying as fast as the faults come. Each object is written twice
		// (created, then changed or removed), three requests each without faults
		// (read, dry-run, apply); ten per write allows for the retries a fifth of
		// failing requests cause, and a hot loop would send thousands.
		if bound := 10 * 2 * size.syncs * size.objects; total > bound {
			t.Errorf("%d requests in the fault window, over the bound of %d (10 per object write): a hot loop", total, bound)
		}
		for i, e := range during {
			// Only an object's path has one caller at a time (the reconcile of its
			// Sync); discovery paths (/api, /apis) are asked by several independent
			// callers, so their next request is not necessarily a retry.
			if e.Fault != faultproxy.TooManyRequests || !strings.Contains(e.Path, "/namespaces/") {
				continue
			}
			for _, next := range during[i+1:] {
				if next.Method == e.Method && next.Path == e.Path && next.Query == e.Query {
					if gap := next.Time.Sub(e.Time); gap < 900*time.Millisecond {
						t.Errorf("%s %s was retried %v after a 429 with Retry-After: 1", e.Method, e.Path, gap)
					}
					break
				}
			}
		}
	})
}

// allReadyBy polls until every Sync is Ready at commit, and returns when that was,
// or the zero time if the deadline came first.
func allReadyBy(t *testing.T, c client.Client, syncs []*v1alpha1.Sync, commit string, deadline time.Time) time.Time {
	t.Helper()
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, s := range syncs {
			got := &v1alpha1.Sync{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil ||
				!apimeta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ReadyCondition) || !strings.HasSuffix(got.Status.LastAppliedRevision, commit) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return time.Time{}
	}
	return time.Now()
}

// faultConfigMaps are the n ConfigMaps of Sync number i, at version v.
func faultConfigMaps(i, n int, v string) map[string]string {
	files := map[string]string{}
	for j := 0; j < n; j++ {
		name := fmt.Sprintf("s%02d-cm-%02d", i, j)
		files[fmt.Sprintf("apps/s%02d/cm-%02d.yaml", i, j)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {version: %s}\n", name, v)
	}
	return files
}

// syncConfigMaps lists, sorted by name, the ConfigMaps that carry Sync s's label.
func syncConfigMaps(t *testing.T, c client.Client, s *v1alpha1.Sync) []corev1.ConfigMap {
	t.Helper()
	list := &corev1.ConfigMapList{}
	harness.Must(t, c.List(context.WithoutCancel(t.Context()), list, client.InNamespace(s.Namespace), client.MatchingLabels{v1alpha1.SyncLabel: v1alpha1.SyncLabelValue(s.Namespace, s.Name)}))
	slices.SortFunc(list.Items, func(a, b corev1.ConfigMap) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

// requestKind names a request by verb and resource, for a breakdown of the log.
func requestKind(e faultproxy.Entry) string {
	parts := strings.Split(strings.Trim(e.Path, "/"), "/")
	resource := parts[len(parts)-1]
	for i, p := range parts {
		if p == "namespaces" && i+2 < len(parts) {
			resource = parts[i+2]
		}
	}
	verb := e.Method
	switch {
	case strings.Contains(e.Query, "watch=true"):
		verb = "WATCH"
	case strings.Contains(e.Query, "dryRun="):
		verb = "DRYRUN"
	}
	if strings.HasSuffix(e.Path, "/status") {
		resource += "/status"
	}
	return verb + " " + resource
}
