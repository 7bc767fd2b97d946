package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/workload"
)

// floorWorkers is the concurrency of the floor: a bare loop of server-side applies.
const floorWorkers = 8

// BenchmarkShippedBinaryFirstSync measures what users get: the real binary at its
// default flags (only its addresses and cache directory set), from the creation of a
// Sync of 1,000 objects (250 apps) to the Sync Ready at the commit, beside a floor
// measured in the same run (the same objects applied by nothing but server-side
// apply requests from 8 goroutines, with no client-side limit). It prints the ratio,
// the agent's requests per object (client-go's own count of what it sent, from the
// agent's /metrics) and the agent's peak RSS. Run it with -benchtime=1x (make bench).
func BenchmarkShippedBinaryFirstSync(b *testing.B) {
	files := workload.Apps(250)
	cp := controlplane.Shared(b)
	for b.Loop() {
		floor, err := workload.Floor(b.Context(), cp.Config(), files, controlplane.NewNamespace(b, cp.Config()), floorWorkers)
		must(b, err)

		c := newClient(b)
		ns := controlplane.NewNamespace(b, cp.Config())
		repo := gitserver.Start(b, gitserver.Options{}).CreateRepo(b, "bench")
		commit := repo.Commit(b, files, "250 apps")
		a := launchAgent(b, cp.KubeconfigPath())
		eventually(b, "the agent serves metrics", func(context.Context) (bool, error) {
			_, err := a.scrape()
			return err == nil, err
		})
		before := requestsSent(b, a)
		s := gitSync(ns, "bench", repo.URL(), "apps", time.Hour)
		start := time.Now()
		must(b, c.Create(b.Context(), s))
		waitRevision(b, c, s, commit)
		first := time.Since(start)
		requests := requestsSent(b, a) - before
		rss := peakRSS(b, a.cmd.Process.Pid)

		fmt.Fprintf(os.Stdout, "\nshipped binary at default flags, first sync of 1,000 objects (250 apps):\n")
		fmt.Fprintf(os.Stdout, "  %-48s %10s   %6.2f× floor\n", "floor: bare server-side apply, 8 workers", floor.Round(time.Millisecond), 1.0)
		fmt.Fprintf(os.Stdout, "  %-48s %10s   %6.2f× floor\n", "tether controller: Sync created → Ready", first.Round(time.Millisecond), first.Seconds()/floor.Seconds())
		fmt.Fprintf(os.Stdout, "  requests sent: %d (%.2f per object); agent peak RSS %d MiB\n", requests, float64(requests)/1000, rss>>20)
		b.ReportMetric(first.Seconds()/floor.Seconds(), "first/floor")
		b.ReportMetric(float64(requests)/1000, "requests/object")
		b.ReportMetric(float64(rss>>20), "peak-RSS-MiB")
	}
}

// restRequests matches client-go's count of the requests a process sent, which
// controller-runtime exports on /metrics.
var restRequests = regexp.MustCompile(`(?m)^rest_client_requests_total\{[^}]*\} (\d+)`)

// requestsSent is how many requests agent a has sent to the API server so far.
func requestsSent(tb testing.TB, a *agent) int {
	tb.Helper()
	page, err := a.scrape()
	must(tb, err)
	total := 0
	for _, m := range restRequests.FindAllStringSubmatch(page, -1) {
		n, err := strconv.Atoi(m[1])
		must(tb, err)
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
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	must(tb, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			must(tb, err)
			return kb << 10
		}
	}
	tb.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}
