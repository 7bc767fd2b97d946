package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/workload"
)

// BenchmarkShippedBinarySyncSetAgainstHandWrittenSyncs measures what a SyncSet
// costs over the Syncs it makes: one SyncSet whose git generator lists the
// directories of workload.Teams (teams/team-0000, …), against the same number
// of hand-written Syncs of the same directories, in the same run. Each side has
// an agent of its own (the shipped binary at its default flags, confined to its
// namespace with --watch-namespaces so that neither sees the other's Syncs) and
// a repository of its own with the same files (so that neither renders from the
// other's cache), one after the other: the hand-written Syncs first, their agent
// stopped before the SyncSet's starts.
//
// It reports, for each side, the time from the first write (the Syncs, or the
// SyncSet) until every Sync is Ready at the commit, and, over convergedIntervals
// intervals from one interval after that, every request the agent sent and those
// the API server answered about Syncs and SyncSets, the ref listings and fetches
// the git server answered, and the SyncSet controller's reconciles. Each side
// deletes its SyncSet and Syncs before its agent stops, so that no later agent
// on the shared control plane meets them; the Syncs orphan their objects, so
// that they go at once. TETHER_BENCH_SYNCS sets the number of
// Syncs (default 200; the figure is 1000), TETHER_BENCH_SYNC_INTERVAL
// the interval of the Syncs and of the generator (default 10s).
func BenchmarkShippedBinarySyncSetAgainstHandWrittenSyncs(b *testing.B) {
	n := envInt(b, benchSyncsEnv, defaultBenchSyncs)
	interval := envDuration(b, benchIntervalEnv, defaultBenchInterval)
	files := workload.Teams(n)
	cp := controlplane.Shared(b)
	for b.Loop() {
		c := unthrottledClient(b)
		git := gitserver.Start(b, gitserver.Options{})

		handNS := controlplane.NewNamespace(b, cp.Config())
		handRepo := git.CreateRepo(b, "hand-written")
		handCommit := handRepo.Commit(b, files, fmt.Sprintf("%d teams", n))
		hand := measureFleetSide(b, c, cp, handNS, handRepo, handCommit, n, interval, func() {
			sendAll(b, n, func(ctx context.Context, i int) error {
				team := workload.TeamName(i)
				s := gitSync(handNS, team, handRepo.URL(), "teams/"+team, interval)
				s.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan
				return c.Create(ctx, s)
			})
		})

		setNS := controlplane.NewNamespace(b, cp.Config())
		setRepo := git.CreateRepo(b, "syncset")
		setCommit := setRepo.Commit(b, files, fmt.Sprintf("%d teams", n))
		set := measureFleetSide(b, c, cp, setNS, setRepo, setCommit, n, interval, func() {
			harness.Must(b, c.Create(b.Context(), teamsSyncSet(b, setNS, setRepo.URL(), interval)))
		})
		reportSyncSetRun(b, n, interval, hand, set)
	}
}

// teamsSyncSet is a SyncSet in ns making a Sync per directory teams/* of url,
// each as createTeamSyncs writes it by hand.
func teamsSyncSet(tb testing.TB, ns, url string, interval time.Duration) *v1alpha1.SyncSet {
	tb.Helper()
	spec, err := json.Marshal(map[string]any{
		"source":         map[string]any{"url": url, "ref": map[string]any{"branch": "main"}, "path": "{{path}}", "interval": interval.String()},
		"destination":    map[string]any{"namespace": ns},
		"deletionPolicy": string(v1alpha1.DeletionPolicyOrphan),
	})
	harness.Must(tb, err)
	return &v1alpha1.SyncSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "teams"},
		Spec: v1alpha1.SyncSetSpec{
			Generators: []v1alpha1.SyncSetGenerator{{Git: &v1alpha1.GitGenerator{URL: url,
				Interval: &metav1.Duration{Duration: interval}, Directories: []v1alpha1.GitDirectory{{Path: "teams/*"}}}}},
			Template: v1alpha1.SyncTemplate{
				Metadata: v1alpha1.SyncTemplateMeta{Name: "{{path.basename}}"},
				Spec:     apiextensionsv1.JSON{Raw: spec},
			},
		},
	}
}

// fleetSide is what one side of the SyncSet benchmark measured.
type fleetSide struct {
	first time.Duration
	// quiet is what was counted over the converged window.
	quiet fleetSample
	// syncRequests and syncSetRequests are the requests about Syncs (status
	// aside) and SyncSets the API server answered in the window, watches aside;
	// syncSetReconciles the SyncSet controller's reconciles.
	syncRequests, syncSetRequests, syncSetReconciles float64
}

// measureFleetSide starts an agent confined to ns, calls create, and measures
// until all n Syncs of ns are Ready at commit, then over the converged window;
// it stops the agent before it returns.
func measureFleetSide(b *testing.B, c client.Client, cp *controlplane.ControlPlane, ns string, repo *gitserver.Repo, commit string, n int, interval time.Duration, create func()) fleetSide {
	b.Helper()
	a := launchAgent(b, cp.KubeconfigPath(), "--watch-namespaces", ns)
	waitQueueMetrics(b, a)
	allReady := waitAllReady(b, ns, n, commit, waitTimeout+time.Duration(n)*time.Second)
	start := time.Now()
	create()
	allReady()
	side := fleetSide{first: time.Since(start)}
	var before, after fleetSample
	var beforeSet, afterSet fleetSide
	overTheConvergedWindow(b, a, interval, func(closing bool) {
		if closing {
			after, afterSet = sampleFleet(b, a, cp, repo), sampleSyncSets(b, a, cp)
		} else {
			before, beforeSet = sampleFleet(b, a, cp, repo), sampleSyncSets(b, a, cp)
		}
	})
	side.quiet = after.minus(before)
	side.syncRequests = afterSet.syncRequests - beforeSet.syncRequests
	side.syncSetRequests = afterSet.syncSetRequests - beforeSet.syncSetRequests
	side.syncSetReconciles = afterSet.syncSetReconciles - beforeSet.syncSetReconciles
	if still := countReady(b, c, ns, commit); still != n {
		b.Fatalf("%d of %d Syncs Ready at %s after the converged window", still, n, commit)
	}
	removeFleet(b, c, ns)
	stopAgent(b, a)
	return side
}

// removeFleet deletes the SyncSets and then the Syncs of ns, and waits until
// the agent has let the Syncs go (no garbage collector runs beside the shared
// control plane, so the Syncs a SyncSet made go by hand).
func removeFleet(tb testing.TB, c client.Client, ns string) {
	tb.Helper()
	harness.Must(tb, c.DeleteAllOf(tb.Context(), &v1alpha1.SyncSet{}, client.InNamespace(ns)))
	harness.Eventually(tb, waitTimeout, "the SyncSets of "+ns+" gone", func(ctx context.Context) (bool, error) {
		l := &v1alpha1.SyncSetList{}
		err := c.List(ctx, l, client.InNamespace(ns))
		return err == nil && len(l.Items) == 0, err
	})
	harness.Must(tb, c.DeleteAllOf(tb.Context(), &v1alpha1.Sync{}, client.InNamespace(ns)))
	harness.Eventually(tb, waitTimeout, "the Syncs of "+ns+" gone", func(ctx context.Context) (bool, error) {
		l := &v1alpha1.SyncList{}
		err := c.List(ctx, l, client.InNamespace(ns))
		return err == nil && len(l.Items) == 0, err
	})
}

// sampleSyncSets counts the requests about Syncs (status aside) and SyncSets
// the API server has answered, watches aside, and the SyncSet controller's
// reconciles.
func sampleSyncSets(tb testing.TB, a *agent, cp *controlplane.ControlPlane) fleetSide {
	tb.Helper()
	api, err := scrapeAPIServer(cp.Config())
	harness.Must(tb, err)
	m, err := scrapeAgent(a)
	harness.Must(tb, err)
	return fleetSide{
		syncRequests: api.sum("apiserver_request_total", func(l map[string]string) bool {
			return l["resource"] == "syncs" && l["subresource"] == "" && l["verb"] != "WATCH"
		}),
		syncSetRequests: api.sum("apiserver_request_total", func(l map[string]string) bool {
			return l["resource"] == "syncsets" && l["verb"] != "WATCH"
		}),
		syncSetReconciles: m.sum("controller_runtime_reconcile_total", func(l map[string]string) bool { return l["controller"] == "syncset" }),
	}
}

// stopAgent stops a and waits for it, leaving launchAgent's cleanup its exit.
func stopAgent(tb testing.TB, a *agent) {
	tb.Helper()
	harness.Must(tb, a.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-a.done:
		a.done <- err
	case <-time.After(15 * time.Second):
		tb.Fatal("tether did not stop within 15s of SIGTERM")
	}
}

func reportSyncSetRun(b *testing.B, n int, interval time.Duration, hand, set fleetSide) {
	out := os.Stdout
	fmt.Fprintf(out, "\nshipped binary at default flags, %d Syncs × 10 objects: one SyncSet over %d directories against %d hand-written Syncs, same run:\n", n, n, n)
	fmt.Fprintf(out, "  %-44s %10s   %6.2f× hand-written\n", "hand-written: first Sync created → all Ready", hand.first.Round(time.Millisecond), 1.0)
	fmt.Fprintf(out, "  %-44s %10s   %6.2f× hand-written\n", "SyncSet: created → all its Syncs Ready", set.first.Round(time.Millisecond), set.first.Seconds()/hand.first.Seconds())
	for _, s := range []struct {
		name string
		side fleetSide
	}{{"hand-written", hand}, {"SyncSet", set}} {
		fmt.Fprintf(out, "  converged, %s (%d intervals of %s): %.0f requests in all, %.0f to managed objects, %.0f about Syncs (status aside), %.0f Sync status writes, %.0f about SyncSets; %.0f SyncSet reconciles; %d ref listings, %d fetches; %s of CPU\n",
			s.name, convergedIntervals, interval, s.side.quiet.agentRequests, s.side.quiet.managedRequests, s.side.syncRequests, s.side.quiet.statusWrites,
			s.side.syncSetRequests, s.side.syncSetReconciles, s.side.quiet.git.RefListings, s.side.quiet.git.Fetches, s.side.quiet.cpu.Round(time.Millisecond))
	}
	b.ReportMetric(set.first.Seconds()/hand.first.Seconds(), "syncset-all-ready/hand-written")
	b.ReportMetric(set.quiet.agentRequests, "syncset-converged-requests")
	b.ReportMetric(hand.quiet.agentRequests, "hand-written-converged-requests")
	b.ReportMetric(set.syncSetReconciles, "syncset-converged-reconciles")
}
