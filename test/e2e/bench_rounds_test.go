package e2e

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/workload"
)

// freshRounds is how many rounds BenchmarkNewSyncRightAfterAPush measures.
const freshRounds = 3

// BenchmarkNewSyncRightAfterAPush measures what a user meets every day: a commit
// that adds an app's path is pushed, and the app's Sync is created right after it.
// One agent (the shipped binary at its default flags) and one repository; in each
// round a commit adds a new path of 1,000 objects (250 apps), a new Sync on that
// path with the default interval is created at once, and the time from its
// creation to Ready at that commit is measured beside a floor of the same round
// (the same objects applied by bare server-side apply requests from 8 goroutines,
// then removed: workload.RemoveFloor).
// The Syncs of earlier rounds keep polling the repository, so from round 2 on the
// agent holds a ref listing made before the push: a round that used it would
// render the commit before, miss the path, and wait out a backoff.
//
// Rounds 2 and 3 should take what round 1 takes (issue 26: within 10%, as ratios to
// their floors). Run it with -benchtime=1x (make bench); TETHER_BENCH_APPS changes
// the apps per round.
func BenchmarkNewSyncRightAfterAPush(b *testing.B) {
	apps := min(benchApps(b), defaultAppsPerSync)
	cp := controlplane.Shared(b)
	for b.Loop() {
		c := newClient(b)
		repo := gitserver.Start(b, gitserver.Options{}).CreateRepo(b, "rounds")
		repo.Commit(b, map[string]string{"README.md": "rounds\n"}, "an empty repository")
		a := launchAgent(b, cp.KubeconfigPath())
		probeNs := controlplane.NewNamespace(b, cp.Config())
		waitWatching(b, c, probeNs, repo.URL())
		sampler := sampleMemory(a.cmd.Process.Pid)

		type round struct{ floor, tether time.Duration }
		var rounds []round
		for i := 1; i <= freshRounds; i++ {
			path := fmt.Sprintf("r%d", i)
			files := map[string]string{}
			for name, content := range workload.Apps(apps) {
				files[path+name[len("apps"):]] = content
			}
			floorNS := controlplane.NewNamespace(b, cp.Config())
			floor, err := workload.Floor(b.Context(), cp.Config(), files, floorNS, floorWorkers)
			harness.Must(b, err)
			harness.Must(b, workload.RemoveFloor(b.Context(), cp.Config(), files, floorNS, floorWorkers))

			ns := controlplane.NewNamespace(b, cp.Config())
			commit := repo.Commit(b, files, "add "+path)
			s := gitSync(ns, "app-"+path, repo.URL(), path, time.Minute)
			ready := waitAllReady(b, ns, 1, commit, max(waitTimeout, time.Duration(4*apps)*50*time.Millisecond))
			start := time.Now()
			harness.Must(b, c.Create(b.Context(), s))
			ready()
			rounds = append(rounds, round{floor: floor, tether: time.Since(start)})
		}
		peak := sampler.stop()
		rss := peakRSS(b, a.cmd.Process.Pid)

		fmt.Fprintf(os.Stdout, "\nshipped binary at default flags, a new Sync of %d objects created right after the push that adds its path:\n", 4*apps)
		fmt.Fprintf(os.Stdout, "  %-8s %14s %14s %8s\n", "round", "floor", "tether", "ratio")
		ratios := make([]float64, len(rounds))
		for i, r := range rounds {
			ratios[i] = r.tether.Seconds() / r.floor.Seconds()
			fmt.Fprintf(os.Stdout, "  %-8d %14s %14s %7.2f×\n", i+1, r.floor.Round(time.Millisecond), r.tether.Round(time.Millisecond), ratios[i])
		}
		later := slices.Max(ratios[1:])
		fmt.Fprintf(os.Stdout, "  the slower of rounds 2 and 3 is %.2f× round 1's ratio; agent peak RSS %d MiB (VmHWM), anonymous %d MiB\n",
			later/ratios[0], rss>>20, peak.Anon>>20)
		b.ReportMetric(ratios[0], "round1/floor")
		b.ReportMetric(later, "later-rounds/floor")
		b.ReportMetric(later/ratios[0], "later/round1")
	}
}
