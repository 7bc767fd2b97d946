package sync_test

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"tether.dev/tether/apply"
	"tether.dev/tether/test/apicount"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/workload"
)

// BenchmarkSyncThousandObjects measures the sync loop on the local control plane with
// 250 apps (a Deployment with 0 replicas, a Service, a ServiceAccount and a ConfigMap
// each: 1,000 objects), against a floor measured in the same run: the same first apply
// done by a bare loop of server-side apply requests with the same concurrency. Run it
// with -benchtime=1x (make bench does); each figure is printed with its ratio to the
// floor, because absolute times on a shared 2-core machine say little.
func BenchmarkSyncThousandObjects(b *testing.B) {
	const n = 250
	files := apps(n)
	for b.Loop() {
		floor := measureFloor(b, files)
		a := startAgent(b)
		ns := controlplane.NewNamespace(b, controlplane.Shared(b).Config())
		repo := gitserver.NewLocalRepo(b, "apps")
		commit := repo.Commit(b, files, "250 apps")

		start := time.Now()
		s := a.newSync(b, ns, repo.FileURL())
		a.WaitApplied(b, s, commit)
		first := time.Since(start)

		a.applies.Reset()
		start = time.Now()
		a.Reconcile(b, s)
		resync := time.Since(start)
		requests := a.applies.Snapshot()

		drift := measureDrift(b, a, ns, 20)

		report(b, []figure{
			{"floor: bare server-side apply loop", floor, floor},
			{"first sync (create Sync → Ready)", first, floor},
			{"converged resync", resync, floor},
			{"drift → corrected, median of 20", drift, floor},
		})
		fmt.Fprintf(os.Stdout, "converged resync requests by verb: %v (writes %d, dry-runs %d)\n", requests, requests.Writes(), requests[apicount.DryRun])
		b.ReportMetric(first.Seconds()/floor.Seconds(), "first/floor")
		b.ReportMetric(float64(resync.Microseconds())/1000, "resync-ms")
		b.ReportMetric(float64(requests.Writes()+requests[apicount.DryRun]), "resync-writes+dryruns")
		b.ReportMetric(float64(drift.Microseconds())/1000, "drift-p50-ms")
	}
}

// measureFloor applies the objects of files with nothing but concurrent server-side
// apply requests: no read, no dry-run, no status. No agent can be faster.
func measureFloor(b *testing.B, files map[string]string) time.Duration {
	cfg := controlplane.Shared(b).Config()
	ns := controlplane.NewNamespace(b, cfg)
	floor, err := workload.Floor(b.Context(), cfg, files, ns, apply.DefaultOptions().Concurrency)
	harness.Must(b, err)
	harness.Must(b, workload.RemoveFloor(b.Context(), cfg, files, ns, apply.DefaultOptions().Concurrency))
	return floor
}

// measureDrift edits the replicas of edits Deployments one at a time, the way
// `kubectl edit` would, and returns the median time until Tether has put each back.
func measureDrift(b *testing.B, a *agent, ns string, edits int) time.Duration {
	var latencies []time.Duration
	for i := 0; i < edits; i++ {
		name := fmt.Sprintf("app-%04d", i)
		start := time.Now()
		scale(b, a.Client, ns, name, 3)
		for replicas(b.Context(), a.Client, ns, name) != 0 {
			if time.Since(start) > waitTimeout {
				b.Fatalf("%s was not reverted within %s", name, waitTimeout)
			}
			time.Sleep(5 * time.Millisecond)
		}
		latencies = append(latencies, time.Since(start))
	}
	slices.Sort(latencies)
	return latencies[len(latencies)/2]
}

type figure struct {
	name        string
	value, base time.Duration
}

func report(b *testing.B, figures []figure) {
	b.Helper()
	fmt.Fprintln(os.Stdout, "\nsync loop, 1,000 objects (250 apps) on the local control plane:")
	for _, f := range figures {
		fmt.Fprintf(os.Stdout, "  %-40s %10s   %6.2f× floor\n", f.name, f.value.Round(time.Millisecond), f.value.Seconds()/f.base.Seconds())
	}
}
