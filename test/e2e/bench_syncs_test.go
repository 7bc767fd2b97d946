package e2e

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/workload"
)

// Knobs of BenchmarkShippedBinaryManySyncs.
const (
	// benchSyncsEnv sets the number of Syncs; the figure is 1,000.
	benchSyncsEnv = "TETHER_BENCH_SYNCS"
	// defaultBenchSyncs keeps make bench within minutes on a small shared machine.
	defaultBenchSyncs = 200
	// benchIntervalEnv sets every Sync's spec.source.interval (a Go duration).
	benchIntervalEnv = "TETHER_BENCH_SYNC_INTERVAL"
	// defaultBenchInterval is the shortest interval the agent allows at its default
	// flags (--min-interval 10s): the most polling a fleet can ask for.
	defaultBenchInterval = 10 * time.Second
	// convergedIntervals is the window, in intervals, over which the converged
	// cost is counted.
	convergedIntervals = 3
)

// BenchmarkShippedBinaryManySyncs measures one agent with many small Syncs, as a
// platform team runs it: the real binary at its default flags, one monorepo with a
// directory per team (teams/team-0000/, …, ten objects each: two apps and two
// ConfigMaps), a Sync per directory, all polling the same repository and branch.
// (Directories rather than one path with a namespace per Sync: that is the layout
// Flux and Argo CD users keep in a monorepo, and it makes the agent render each
// path, where one shared path would be rendered once.) The Syncs and their objects
// share one namespace: the number of namespaces changes neither the agent's work
// nor the floor's.
//
// It reports the time from the first Sync's creation until every Sync is Ready at
// the commit, beside the floor of the same run (the same objects applied by bare
// server-side apply from 8 goroutines, then removed so that the agent meets the
// cluster the floor met: workload.RemoveFloor); then, over convergedIntervals intervals,
// the requests to managed objects (counted by the API server itself), the Sync
// status writes, and the ref listings and fetches the git server answered;
// reconcile queue latency (workqueue_queue_duration_seconds, from the agent's
// native histograms) during the first sync and in the converged window; and the
// agent's peak RSS; and the CPU time of etcd, kube-apiserver and the client (the
// benchmark, then the agent) during the floor and the first sync, as in
// BenchmarkShippedBinaryFirstSync (with TETHER_BENCH_PROFILE_DIR and
// controlplane.ProfilingEnv set, CPU profiles of kube-apiserver over the start of
// each). TETHER_BENCH_SYNCS sets the number of Syncs (default 200; the
// issue's figure is 1000), TETHER_BENCH_SYNC_INTERVAL their interval (default 10s);
// TETHER_BENCH_AGENT_FLAGS adds flags to the agent's, for experiments (the figure
// is at default flags).
func BenchmarkShippedBinaryManySyncs(b *testing.B) {
	n := envInt(b, benchSyncsEnv, defaultBenchSyncs)
	interval := envDuration(b, benchIntervalEnv, defaultBenchInterval)
	files := workload.Teams(n)
	cp := controlplane.Shared(b)
	profiles := os.Getenv("TETHER_BENCH_PROFILE_DIR")
	// Profiles cover about the first 15 ms per Sync of each phase.
	profiled := max(5*time.Second, time.Duration(n)*15*time.Millisecond)
	for b.Loop() {
		floorCPU := meterCPU(b, benchPids(cp, os.Getpid(), "floor (in the benchmark)"))
		floorProfile := profileAPIServer(b, cp.Config(), profiles, "apiserver-fleet-floor.pb.gz", profiled)
		floorNS := controlplane.NewNamespace(b, cp.Config())
		floor, err := workload.Floor(b.Context(), cp.Config(), files, floorNS, floorWorkers)
		harness.Must(b, err)
		floorSpent := floorCPU.stop()
		floorProfile()
		harness.Must(b, workload.RemoveFloor(b.Context(), cp.Config(), files, floorNS, floorWorkers))

		c := unthrottledClient(b)
		ns := controlplane.NewNamespace(b, cp.Config())
		repo := gitserver.Start(b, gitserver.Options{}).CreateRepo(b, "monorepo")
		commit := repo.Commit(b, files, fmt.Sprintf("%d teams", n))
		a := launchAgent(b, cp.KubeconfigPath(), strings.Fields(os.Getenv("TETHER_BENCH_AGENT_FLAGS"))...)
		waitQueueMetrics(b, a)

		allReady := waitAllReady(b, ns, n, commit, waitTimeout+time.Duration(n)*time.Second)
		run := fleetRun{syncs: n, interval: interval, floor: floor, floorCPU: floorSpent}
		run.before = sampleFleet(b, a, cp, repo)
		tetherCPU := meterCPU(b, benchPids(cp, a.cmd.Process.Pid, "tether"))
		tetherProfile := profileAPIServer(b, cp.Config(), profiles, "apiserver-fleet-tether.pb.gz", profiled)
		start := time.Now()
		createTeamSyncs(b, c, ns, repo.URL(), n, interval)
		run.created = time.Since(start)
		allReady()
		run.first = time.Since(start)
		run.firstCPU = tetherCPU.stop()
		tetherProfile()
		run.ready = sampleFleet(b, a, cp, repo)
		overTheConvergedWindow(b, a, interval, func(closing bool) {
			if closing {
				run.after = sampleFleet(b, a, cp, repo)
			} else {
				run.converged = sampleFleet(b, a, cp, repo)
			}
		})
		if still := countReady(b, c, ns, commit); still != n {
			b.Fatalf("%d of %d Syncs Ready at %s after the converged window", still, n, commit)
		}
		run.rss = peakRSS(b, a.cmd.Process.Pid)
		run.report(b)
	}
}

// waitQueueMetrics waits until the agent serves its work queue's metrics: they
// appear once the controller has started, after the agent's caches have synced,
// and sampleFleet needs them.
func waitQueueMetrics(tb testing.TB, a *agent) {
	tb.Helper()
	harness.Eventually(tb, waitTimeout, "the agent serves its work queue's metrics", func(context.Context) (bool, error) {
		m, err := scrapeAgent(a)
		if err != nil {
			return false, err
		}
		_, ok := m.histogram("workqueue_queue_duration_seconds", syncController)
		return ok, nil
	})
}

// overTheConvergedWindow calls sample when the converged window opens and when
// it closes. Counting over this stated window is the point: the converged cost
// is what the agent does while nothing changes, so the sleep is the window,
// not a wait for an event. It opens once the agent's Sync queue has drained
// (no Sync queued, no reconcile running: the reconciles its watches queued
// during the first sync are done), and lasts convergedIntervals intervals.
func overTheConvergedWindow(tb testing.TB, a *agent, interval time.Duration, sample func(closing bool)) {
	tb.Helper()
	harness.Eventually(tb, waitTimeout, "the agent's Sync queue to drain", func(context.Context) (bool, error) {
		m, err := scrapeAgent(a)
		if err != nil {
			return false, err
		}
		return m.sum("workqueue_depth", syncController) == 0 && m.sum("controller_runtime_active_workers", syncController) == 0, nil
	})
	sample(false)
	time.Sleep(convergedIntervals * interval)
	sample(true)
}

// fleetRun is what BenchmarkShippedBinaryManySyncs measured.
type fleetRun struct {
	syncs    int
	interval time.Duration
	// floor is the bare server-side apply of the same objects; created is how
	// long the Syncs took to create, and first until all were Ready.
	floor, created, first time.Duration
	// The counts before the first Sync, when all were Ready, when the converged
	// window opened and when it closed.
	before, ready, converged, after fleetSample
	rss                             int64
	// floorCPU and firstCPU are the CPU times of etcd, kube-apiserver and the
	// client (the benchmark, then the agent) during the floor and the first sync.
	floorCPU, firstCPU map[string]time.Duration
}

// report prints the figures of run and reports the headline ones as metrics.
func (run fleetRun) report(b *testing.B) {
	first, quiet := run.ready.minus(run.before), run.after.minus(run.converged)
	objects := float64(10 * run.syncs)
	window := convergedIntervals * run.interval
	out := os.Stdout
	fmt.Fprintf(out, "\nshipped binary at default flags, %d Syncs × 10 objects on one repository (%.0f objects):\n", run.syncs, objects)
	fmt.Fprintf(out, "  %-52s %10s   %6.2f× floor\n", "floor: bare server-side apply, 8 workers", run.floor.Round(time.Millisecond), 1.0)
	fmt.Fprintf(out, "  %-52s %10s   %6.2f× floor\n", "tether controller: first Sync created → all Ready", run.first.Round(time.Millisecond), run.first.Seconds()/run.floor.Seconds())
	fmt.Fprintf(out, "  (creating the %d Syncs took %s of it; the agent used %s of CPU)\n", run.syncs, run.created.Round(time.Millisecond), first.cpu.Round(time.Millisecond))
	fmt.Fprintf(out, "  first sync: %.0f reconciles, %.0f requests sent (%.2f per object), %d ref listings, %d fetches, %.0f Sync status writes\n",
		first.reconciles, first.agentRequests, first.agentRequests/objects, first.git.RefListings, first.git.Fetches, first.statusWrites)
	fmt.Fprintf(out, "  converged (%d intervals of %s, from one interval after all Ready): %.0f reconciles, %.0f requests to managed objects, %.0f Sync status writes, %.0f requests in all,\n",
		convergedIntervals, run.interval, quiet.reconciles, quiet.managedRequests, quiet.statusWrites, quiet.agentRequests)
	fmt.Fprintf(out, "    %d ref listings (%.2f per interval), %d fetches; the agent used %s of CPU (%.0f%% of a core)\n",
		quiet.git.RefListings, float64(quiet.git.RefListings)/convergedIntervals, quiet.git.Fetches, quiet.cpu.Round(time.Millisecond), 100*quiet.cpu.Seconds()/window.Seconds())
	fmt.Fprintf(out, "    the API server answered (first sync): %s\n", requestsByKind(first.byRequest))
	fmt.Fprintf(out, "    the API server answered (converged): %s\n", requestsByKind(quiet.byRequest))
	fmt.Fprintf(out, "  reconcile queue latency: first sync p50 %s p99 %s; converged p50 %s p99 %s\n",
		seconds(first.queue.quantile(0.5)), seconds(first.queue.quantile(0.99)), seconds(quiet.queue.quantile(0.5)), seconds(quiet.queue.quantile(0.99)))
	fmt.Fprintf(out, "  agent peak RSS %d MiB\n", run.rss>>20)
	fmt.Fprintf(out, "  CPU time during the floor: %s\n", formatCPU(run.floorCPU))
	fmt.Fprintf(out, "  CPU time during the first sync: %s; the machine's %d cores were %.0f%% busy with them\n",
		formatCPU(run.firstCPU), runtime.NumCPU(), 100*totalCPU(run.firstCPU).Seconds()/(run.first.Seconds()*float64(runtime.NumCPU())))
	b.ReportMetric(run.first.Seconds()/run.floor.Seconds(), "all-ready/floor")
	b.ReportMetric(quiet.managedRequests, "converged-managed-requests")
	b.ReportMetric(float64(quiet.git.RefListings)/convergedIntervals, "ref-listings/interval")
	b.ReportMetric(quiet.queue.quantile(0.99)*1000, "converged-queue-p99-ms")
	b.ReportMetric(float64(run.rss>>20), "peak-RSS-MiB")
	b.ReportMetric(run.firstCPU["kube-apiserver"].Seconds()/max(run.floorCPU["kube-apiserver"].Seconds(), 0.01), "apiserver-cpu/floor")
	b.ReportMetric(totalCPU(run.firstCPU).Seconds()/max(totalCPU(run.floorCPU).Seconds(), 0.01), "cpu/floor")
}

// fleetSample is what the agent, the API server and the git server have counted
// at one moment.
type fleetSample struct {
	// agentRequests is every request the agent sent (client-go's count).
	agentRequests float64
	// reconciles is how many reconciles of Syncs the agent has run.
	reconciles float64
	// queue is how long Syncs waited in the agent's work queue.
	queue nativeHistogram
	// managedRequests is the requests the API server answered about the kinds
	// the Syncs manage, watches aside.
	managedRequests float64
	// statusWrites is the writes of Sync status the API server answered.
	statusWrites float64
	// byRequest counts the API server's requests by resource and verb.
	byRequest map[string]float64
	git       gitserver.Requests
	// cpu is the CPU time the agent has used.
	cpu time.Duration
}

// minus is what was counted between earlier and s.
func (s fleetSample) minus(earlier fleetSample) fleetSample {
	out := fleetSample{
		agentRequests:   s.agentRequests - earlier.agentRequests,
		reconciles:      s.reconciles - earlier.reconciles,
		queue:           s.queue.since(earlier.queue),
		managedRequests: s.managedRequests - earlier.managedRequests,
		statusWrites:    s.statusWrites - earlier.statusWrites,
		byRequest:       map[string]float64{},
		git: gitserver.Requests{
			RefListings: s.git.RefListings - earlier.git.RefListings,
			Fetches:     s.git.Fetches - earlier.git.Fetches,
		},
		cpu: s.cpu - earlier.cpu,
	}
	for k, v := range s.byRequest {
		if d := v - earlier.byRequest[k]; d > 0 {
			out.byRequest[k] = d
		}
	}
	return out
}

// managedResources are the resources of workload.Teams.
var managedResources = map[string]bool{"configmaps": true, "deployments": true, "services": true, "serviceaccounts": true}

// syncController matches the series of the Sync controller and its work queue.
func syncController(l map[string]string) bool {
	return l["controller"] == "sync" || l["name"] == "sync"
}

func sampleFleet(tb testing.TB, a *agent, cp *controlplane.ControlPlane, repo *gitserver.Repo) fleetSample {
	tb.Helper()
	agentMetrics, err := scrapeAgent(a)
	harness.Must(tb, err)
	api, err := scrapeAPIServer(cp.Config())
	harness.Must(tb, err)
	queue, ok := agentMetrics.histogram("workqueue_queue_duration_seconds", syncController)
	if !ok {
		tb.Fatal("the agent's /metrics has no native histogram workqueue_queue_duration_seconds{name=\"sync\"}")
	}
	return fleetSample{
		agentRequests: agentMetrics.sum("rest_client_requests_total", nil),
		reconciles:    agentMetrics.sum("controller_runtime_reconcile_total", syncController),
		queue:         queue,
		managedRequests: api.sum("apiserver_request_total", func(l map[string]string) bool {
			return managedResources[l["resource"]] && l["verb"] != "WATCH"
		}),
		statusWrites: api.sum("apiserver_request_total", func(l map[string]string) bool {
			return l["resource"] == "syncs" && l["subresource"] == "status" && l["verb"] != "GET" && l["verb"] != "LIST" && l["verb"] != "WATCH"
		}),
		byRequest: api.byRequest(),
		git:       repo.Requests(),
		cpu:       cpuTime(tb, a.cmd.Process.Pid),
	}
}

// byRequest counts apiserver_request_total by "verb resource[/subresource]",
// watches aside.
func (f families) byRequest() map[string]float64 {
	out := map[string]float64{}
	for _, m := range f["apiserver_request_total"].GetMetric() {
		l := labelMap(m)
		if l["verb"] == "WATCH" {
			continue
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		if l["dry_run"] != "" {
			key += " (dry run)"
		}
		out[key] += m.GetCounter().GetValue()
	}
	return out
}

// requestsByKind lists counts by kind of request, most frequent first.
func requestsByKind(counts map[string]float64) string {
	kinds := make([]string, 0, len(counts))
	for k := range counts {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return counts[kinds[i]] > counts[kinds[j]] })
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %.0f", k, counts[k])
	}
	return strings.Join(parts, ", ")
}

// unthrottledClient is newClient without a client-side limit, so that creating
// and counting a thousand Syncs does not wait on the benchmark's own client.
// Before it returns, it creates and deletes a suspended Sync: the first Sync
// created after the control plane installed the CRD took 2 s (later ones 1-2 ms),
// which the fleet benchmark, whose first Sync write is inside its clock, counted as
// the agent's time.
func unthrottledClient(tb testing.TB) client.Client {
	tb.Helper()
	c, err := client.New(unthrottledConfig(tb), client.Options{Scheme: newClient(tb).Scheme()})
	harness.Must(tb, err)
	probe := gitSync(controlplane.NewNamespace(tb, controlplane.Shared(tb).Config()), "warm-up", "https://git.example/warm-up.git", ".", time.Hour)
	probe.Spec.Suspend = true
	harness.Must(tb, c.Create(tb.Context(), probe))
	harness.Must(tb, c.Delete(tb.Context(), probe))
	return c
}

func unthrottledConfig(tb testing.TB) *rest.Config {
	tb.Helper()
	cfg := controlplane.Shared(tb).Config()
	cfg.QPS = -1
	return cfg
}

// createTeamSyncs creates a Sync per team of workload.Teams(n) in ns, from 8
// goroutines, as `kubectl apply` of a directory of Syncs would send them.
func createTeamSyncs(tb testing.TB, c client.Client, ns, url string, n int, interval time.Duration) {
	tb.Helper()
	sendAll(tb, n, func(ctx context.Context, i int) error {
		team := workload.TeamName(i)
		return c.Create(ctx, gitSync(ns, team, url, "teams/"+team, interval))
	})
}

// waitAllReady waits until all n Syncs of ns are Ready at commit, following
// them by watch from before the first is created (listing a thousand Syncs with
// their inventories every moment would load the API server the benchmark
// measures; and a watch sees the moment, where a poll would add up to its period).
// It waits at most timeout. Call it before creating the Syncs, and the returned
// function after.
func waitAllReady(tb testing.TB, ns string, n int, commit string, timeout time.Duration) func() {
	tb.Helper()
	c, err := client.NewWithWatch(unthrottledConfig(tb), client.Options{Scheme: newClient(tb).Scheme()})
	harness.Must(tb, err)
	ctx, cancel := context.WithTimeout(tb.Context(), timeout)
	w, err := c.Watch(ctx, &v1alpha1.SyncList{}, client.InNamespace(ns))
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	// The watch is read from now on, while the Syncs are created: events left
	// unread fill the API server's buffer for this watcher, and it closes a
	// watcher that does not keep up (a fleet's agent writes statuses while the
	// benchmark is still creating Syncs).
	tb.Cleanup(cancel)
	done := make(chan int, 1)
	go func() {
		defer w.Stop()
		ready := map[string]bool{}
		defer func() { done <- len(ready) }()
		for ev := range w.ResultChan() {
			s, ok := ev.Object.(*v1alpha1.Sync)
			if !ok {
				continue
			}
			if readyAt(s, commit) && ev.Type != watch.Deleted {
				ready[s.Name] = true
			} else {
				delete(ready, s.Name)
			}
			if len(ready) == n {
				return
			}
		}
	}()
	return func() {
		tb.Helper()
		defer cancel()
		if got := <-done; got != n {
			tb.Fatalf("%d of %d Syncs Ready at %s when the watch ended (%s allowed): %v", got, n, commit, timeout, ctx.Err())
		}
	}
}

func readyAt(s *v1alpha1.Sync, commit string) bool {
	return apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.ReadyCondition) && strings.HasSuffix(s.Status.LastAppliedRevision, commit)
}

// countReady counts the Syncs of ns that are Ready at commit.
func countReady(tb testing.TB, c client.Client, ns, commit string) int {
	tb.Helper()
	list := &v1alpha1.SyncList{}
	harness.Must(tb, c.List(tb.Context(), list, client.InNamespace(ns)))
	ready := 0
	for _, s := range list.Items {
		if readyAt(&s, commit) {
			ready++
		}
	}
	return ready
}

func envInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

func envDuration(tb testing.TB, name string, def time.Duration) time.Duration {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		tb.Fatalf("%s=%q: want a positive duration", name, v)
	}
	return d
}

// seconds prints a latency from a histogram.
func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(10 * time.Microsecond).String()
}

// cpuTime is the CPU time process pid has used, in user and system mode.
func cpuTime(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	harness.Must(tb, err)
	// The command name, in parentheses, may hold spaces; the fields after it are
	// fixed: utime and stime are the 12th and 13th.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	ticks := 0
	for _, f := range fields[11:13] {
		n, err := strconv.Atoi(f)
		harness.Must(tb, err)
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on Linux.
const clockTicks = 100
