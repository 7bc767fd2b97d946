package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/workload"
)

// floorWorkers is the concurrency of the floor: a bare loop of server-side applies.
const floorWorkers = 8

// BenchmarkShippedBinaryFirstSync measures what users get: the real binary at its
// default flags (only its addresses and cache directory set), from the creation of a
// Sync of 1,000 objects (250 apps) to the Sync Ready at the commit, beside a floor
// measured in the same run (the same objects applied by nothing but server-side
// apply requests from 8 goroutines, with no client-side limit, then removed so that
// the agent meets the cluster the floor met: workload.RemoveFloor). It prints the ratio,
// the agent's requests per object (client-go's own count of what it sent, from the
// agent's /metrics), the agent's peak RSS, and the CPU time that etcd, kube-apiserver
// and the client (the floor's loop, or the agent) spent during each (from
// /proc/PID/stat; apiserver-cpu/floor is the API server's ratio, cpu/floor that of
// the three together: on a machine shared with other work, steadier than the
// ratio of wall times). Run it with -benchtime=1x (make bench).
//
// Five environment variables change what it measures, for a run by hand:
// TETHER_BENCH_APPS sets how many apps (of 4 objects) are synced (2500: the 10,000
// objects of the memory goal at scale), TETHER_BENCH_APPS_PER_SYNC how many apps
// one Sync holds (250 by default: past that, one Sync per 250 apps, under
// apps/part-NN; 2500 with 2500 apps is one Sync of the 10,000 objects), and
// TETHER_BENCH_PROFILE_DIR names a
// directory where it saves the agent's heap profile once the Sync is Ready
// (go tool pprof -sample_index=alloc_space shows what the first sync allocated)
// and CPU profiles of the agent during the first sync, and with
// TETHER_APISERVER_PROFILING=1 (controlplane.ProfilingEnv) of kube-apiserver
// during the floor and during the first sync,
// and TETHER_BENCH_AGENT_FLAGS adds flags to the agent's (space-separated: a
// run with "--dry-run-concurrency=8" beside one without measures that default),
// and TETHER_BENCH_CHART=1 makes each Sync's path a Helm chart of the same
// objects (what rendering a chart costs the agent).
func BenchmarkShippedBinaryFirstSync(b *testing.B) {
	apps := benchApps(b)
	perSync := envInt(b, "TETHER_BENCH_APPS_PER_SYNC", defaultAppsPerSync)
	files, paths := benchFiles(apps, perSync)
	plain, _ := benchPlainFiles(apps, perSync)
	objects := 4 * apps
	cp := controlplane.Shared(b)
	profiles := os.Getenv("TETHER_BENCH_PROFILE_DIR")
	for b.Loop() {
		floorNS := controlplane.NewNamespace(b, cp.Config())
		floorCPU := meterCPU(b, benchPids(cp, os.Getpid(), "floor (in the benchmark)"))
		floorProfile := profileAPIServer(b, cp.Config(), profiles, "apiserver-floor.pb.gz", max(time.Second, time.Duration(objects)*time.Millisecond))
		floor, err := workload.Floor(b.Context(), cp.Config(), plain, floorNS, floorWorkers)
		harness.Must(b, err)
		floorSpent := floorCPU.stop()
		floorProfile()
		harness.Must(b, workload.RemoveFloor(b.Context(), cp.Config(), plain, floorNS, floorWorkers))

		c := newClient(b)
		ns := controlplane.NewNamespace(b, cp.Config())
		repo := gitserver.Start(b, gitserver.Options{}).CreateRepo(b, "bench")
		commit := repo.Commit(b, files, fmt.Sprintf("%d apps", apps))
		flags := strings.Fields(os.Getenv("TETHER_BENCH_AGENT_FLAGS"))
		pprofAddr := harness.FreeAddr(b)
		if profiles != "" {
			flags = append(flags, "--pprof-bind-address", pprofAddr)
		}
		a := launchAgent(b, cp.KubeconfigPath(), flags...)
		harness.Eventually(b, waitTimeout, "the agent serves metrics", func(context.Context) (bool, error) {
			_, err := a.scrape()
			return err == nil, err
		})
		waitWatching(b, c, ns, repo.URL())
		before := requestsSent(b, a)
		idle := memoryOf(b, a.cmd.Process.Pid)
		sampler := sampleMemory(a.cmd.Process.Pid)
		syncs := make([]*v1alpha1.Sync, len(paths))
		for i, path := range paths {
			syncs[i] = gitSync(ns, fmt.Sprintf("bench-%d", i), repo.URL(), path, time.Hour)
		}
		tetherCPU := meterCPU(b, benchPids(cp, a.cmd.Process.Pid, "tether"))
		// Profiles cover the first sync (about 2.5 ms per object here), and only it.
		profiled := max(2*time.Second, time.Duration(objects)*2500*time.Microsecond)
		tetherProfile := profileAPIServer(b, cp.Config(), profiles, "apiserver-tether.pb.gz", profiled)
		agentProfile := profileAgent(b, pprofAddr, profiles, "agent-first-sync.pb.gz", profiled)
		// A watch, not a poll, sees the Syncs turn Ready: a poll every 100 ms
		// would add up to a tenth of a second, 5% of a first sync here.
		allReady := waitAllReady(b, ns, len(syncs), commit, max(waitTimeout, time.Duration(objects)*50*time.Millisecond))
		start := time.Now()
		for _, s := range syncs {
			harness.Must(b, c.Create(b.Context(), s))
		}
		allReady()
		first := time.Since(start)
		tetherSpent := tetherCPU.stop()
		tetherProfile()
		agentProfile()
		requests := requestsSent(b, a) - before
		peak := sampler.stop()
		rss := peakRSS(b, a.cmd.Process.Pid)
		if profiles != "" {
			saveHeapProfile(b, pprofAddr, filepath.Join(profiles, fmt.Sprintf("heap-%d.pb.gz", objects)))
		}

		fmt.Fprintf(os.Stdout, "\nshipped binary at default flags, first sync of %d objects (%d apps, %d Syncs):\n", objects, apps, len(syncs))
		fmt.Fprintf(os.Stdout, "  %-48s %10s   %6.2f× floor\n", "floor: bare server-side apply, 8 workers", floor.Round(time.Millisecond), 1.0)
		fmt.Fprintf(os.Stdout, "  %-48s %10s   %6.2f× floor\n", "tether controller: Syncs created → Ready", first.Round(time.Millisecond), first.Seconds()/floor.Seconds())
		fmt.Fprintf(os.Stdout, "  requests sent: %d (%.2f per object); agent peak RSS %d MiB (VmHWM: %d KiB)\n", requests, float64(requests)/float64(objects), rss>>20, rss>>10)
		fmt.Fprintf(os.Stdout, "  of which, sampled every %s: anonymous (heap, stacks) peak %d MiB, idle before the Sync %d MiB; the binary's mapped file %d MiB\n",
			memorySampleEvery, peak.Anon>>20, idle.Anon>>20, peak.File>>20)
		fmt.Fprintf(os.Stdout, "  CPU time during the floor: %s\n", formatCPU(floorSpent))
		fmt.Fprintf(os.Stdout, "  CPU time during tether's first sync: %s\n", formatCPU(tetherSpent))
		b.ReportMetric(first.Seconds()/floor.Seconds(), "first/floor")
		b.ReportMetric(float64(requests)/float64(objects), "requests/object")
		b.ReportMetric(float64(rss>>20), "peak-RSS-MiB")
		b.ReportMetric(float64(peak.Anon>>20), "peak-anon-MiB")
		b.ReportMetric(tetherSpent["kube-apiserver"].Seconds()/max(floorSpent["kube-apiserver"].Seconds(), 0.01), "apiserver-cpu/floor")
		b.ReportMetric(totalCPU(tetherSpent).Seconds()/max(totalCPU(floorSpent).Seconds(), 0.01), "cpu/floor")
	}
}

// benchPids names the processes whose CPU time a phase of a benchmark counts: the
// control plane's etcd and kube-apiserver, and the client (pid, named client).
func benchPids(cp *controlplane.ControlPlane, pid int, client string) map[string]int {
	pids := map[string]int{client: pid}
	for name, p := range cp.Pids() {
		if name == "etcd" || name == "kube-apiserver" {
			pids[name] = p
		}
	}
	return pids
}

// benchApps is how many apps the shipped binary's benchmark syncs: 250 (1,000
// objects), or TETHER_BENCH_APPS.
func benchApps(tb testing.TB) int {
	v := os.Getenv("TETHER_BENCH_APPS")
	if v == "" {
		return 250
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		tb.Fatalf("TETHER_BENCH_APPS=%q: want a positive number of apps", v)
	}
	return n
}

// defaultAppsPerSync is the most apps one Sync of the benchmark holds unless
// TETHER_BENCH_APPS_PER_SYNC says otherwise: 1,000 objects.
const defaultAppsPerSync = 250

// benchFiles returns the repository of n apps, and the paths of the Syncs that
// apply them: "apps", or past perSync apps, one part of apps/ each. With
// TETHER_BENCH_CHART set, each path is a Helm chart whose templates are those
// files: the same objects, rendered by Helm's engine.
func benchFiles(n, perSync int) (files map[string]string, paths []string) {
	files, paths = benchPlainFiles(n, perSync)
	if os.Getenv("TETHER_BENCH_CHART") == "" {
		return files, paths
	}
	charts := map[string]string{}
	for _, p := range paths {
		charts[p+"/Chart.yaml"] = "apiVersion: v2\nname: bench\nversion: 1.0.0\n"
	}
	for name, data := range files {
		dir, file := filepath.Split(name)
		charts[dir+"templates/"+file] = data
	}
	return charts, paths
}

// benchPlainFiles is benchFiles as plain YAML.
func benchPlainFiles(n, perSync int) (files map[string]string, paths []string) {
	files = workload.Apps(n)
	if n <= perSync {
		return files, []string{"apps"}
	}
	parted := map[string]string{}
	for i := 0; i < n; i++ {
		part := fmt.Sprintf("apps/part-%02d", i/perSync)
		if i%perSync == 0 {
			paths = append(paths, part)
		}
		name := fmt.Sprintf("app-%04d.yaml", i)
		parted[part+"/"+name] = files["apps/"+name]
	}
	return parted, paths
}

// saveHeapProfile saves the heap profile the agent serves at addr (its
// --pprof-bind-address) to path.
func saveHeapProfile(tb testing.TB, addr, path string) {
	tb.Helper()
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap") //nolint:noctx // a test's one-shot read
	harness.Must(tb, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	harness.Must(tb, err)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("reading the agent's heap profile: %s: %s", resp.Status, data)
	}
	harness.Must(tb, os.WriteFile(path, data, 0o600))
	tb.Logf("the agent's heap profile: %s", path)
}

// restRequests matches client-go's count of the requests a process sent, which
// controller-runtime exports on /metrics.
var restRequests = regexp.MustCompile(`(?m)^rest_client_requests_total\{[^}]*\} (\d+)`)

// requestsSent is how many requests agent a has sent to the API server so far.
func requestsSent(tb testing.TB, a *agent) int {
	tb.Helper()
	page, err := a.scrape()
	harness.Must(tb, err)
	total := 0
	for _, m := range restRequests.FindAllStringSubmatch(page, -1) {
		n, err := strconv.Atoi(m[1])
		harness.Must(tb, err)
		total += n
	}
	if total == 0 {
		tb.Fatal("the agent's /metrics has no rest_client_requests_total")
	}
	return total
}

// peakRSS is the most resident memory process pid has had (VmHWM), in bytes.
func peakRSS(tb testing.TB, pid int) int64 {
	tb.Helper()
	return memoryOf(tb, pid).Peak
}

// memoryOf reads process pid's memory.
func memoryOf(tb testing.TB, pid int) harness.Memory {
	tb.Helper()
	m, err := harness.MemoryOf(pid)
	harness.Must(tb, err)
	return m
}

// memorySampleEvery is how often sampleMemory reads a process's memory. The kernel
// keeps the peak of the total only (VmHWM); the peaks of its parts are sampled.
const memorySampleEvery = 20 * time.Millisecond

// memorySampler records the most anonymous and file-backed memory a process had
// at any of its samples.
type memorySampler struct {
	done chan struct{}
	peak chan harness.Memory
}

func sampleMemory(pid int) *memorySampler {
	s := &memorySampler{done: make(chan struct{}), peak: make(chan harness.Memory, 1)}
	go func() {
		var peak harness.Memory
		tick := time.NewTicker(memorySampleEvery)
		defer tick.Stop()
		for {
			if m, err := harness.MemoryOf(pid); err == nil {
				peak.Anon, peak.File = max(peak.Anon, m.Anon), max(peak.File, m.File)
			}
			select {
			case <-s.done:
				s.peak <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the peaks seen.
func (s *memorySampler) stop() harness.Memory {
	close(s.done)
	return <-s.peak
}

// waitWatching returns once the agent reconciles Syncs as it would for a user: a
// suspended probe Sync is created, reported on and deleted. A Sync created in the
// agent's first moments waited about 2 s for it (its informers still settling on
// a CRD the benchmark had just installed), which no user of a running agent sees.
func waitWatching(tb testing.TB, c client.Client, ns, url string) {
	tb.Helper()
	probe := gitSync(ns, "probe", url, ".", time.Hour)
	probe.Spec.Suspend = true
	harness.Must(tb, c.Create(tb.Context(), probe))
	harness.Eventually(tb, waitTimeout, "the agent reports on a probe Sync", func(ctx context.Context) (bool, error) {
		got := &v1alpha1.Sync{}
		err := c.Get(ctx, client.ObjectKeyFromObject(probe), got)
		return err == nil && got.Status.ObservedGeneration == got.Generation, err
	})
	harness.Must(tb, c.Delete(tb.Context(), probe))
	waitGone(tb, c, probe)
}
