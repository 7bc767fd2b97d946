package source_test

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
)

// BenchmarkPollUnchanged measures what one poll of a repository with nothing new
// costs, against a baseline from the same run: the first fetch of the same
// repository into an empty cache (what every poll would cost without the cache and
// the ref listing first). The repository has 30 commits of 200 manifests, so that
// history weighs as it does in a real deploy repository. One iteration (make bench
// runs -benchtime=1x) does one first fetch, 200 polls (figures per poll) and the
// fetch of one new commit.
//
// Requests and bytes are counted at the git server; CPU is this process's (the
// agent's side, plus the Go half of the test server) and, apart, that of the
// server's git processes.
func BenchmarkPollUnchanged(b *testing.B) {
	const polls = 200
	repo := gitserver.Start(b, gitserver.Options{}).CreateRepo(b, "deploy")
	for c := 0; c < 30; c++ {
		files := map[string]string{}
		for i := 0; i < 200; i++ {
			files[fmt.Sprintf("apps/app-%03d/cm.yaml", i)] = configMap(fmt.Sprintf("app-%03d", i), fmt.Sprintf("commit-%d-%0300d", c, i))
		}
		repo.Commit(b, files, fmt.Sprintf("commit %d", c))
	}
	req := source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Branch: "main"}}

	for b.Loop() {
		src := newBenchSource(b)
		first := measure(repo, 1, func() { benchFetch(b, src, req) })
		poll := measure(repo, polls, func() {
			for i := 0; i < polls; i++ {
				benchFetch(b, src, req)
			}
		})

		repo.Commit(b, map[string]string{"apps/app-000/cm.yaml": configMap("app-000", "changed")}, "one change")
		update := measure(repo, 1, func() { benchFetch(b, src, req) })

		fmt.Fprintf(os.Stdout, "\npoll of an unchanged branch (mean of %d polls) against the first fetch of the same repository\n", polls)
		fmt.Fprintf(os.Stdout, "(30 commits of 200 manifests), and the fetch of one new commit:\n")
		fmt.Fprintf(os.Stdout, "  %-22s %12s %12s %10s %14s\n", "", "first fetch", "poll", "poll/first", "one new commit")
		row := func(name string, first, poll, update float64, format func(float64) string) {
			fmt.Fprintf(os.Stdout, "  %-22s %12s %12s %9.4f× %14s\n", name, format(first), format(poll), poll/max(first, 1e-9), format(update))
		}
		count := func(v float64) string { return fmt.Sprintf("%.0f", v) }
		dur := func(v float64) string { return time.Duration(v).Round(time.Microsecond).String() }
		row("requests", first.requests, poll.requests, update.requests, count)
		row("bytes from the server", first.sent, poll.sent, update.sent, count)
		row("bytes to the server", first.received, poll.received, update.received, count)
		row("CPU, agent process", float64(first.cpu), float64(poll.cpu), float64(update.cpu), dur)
		row("CPU, server's git", float64(first.serverCPU), float64(poll.serverCPU), float64(update.serverCPU), dur)
		row("wall time", float64(first.wall), float64(poll.wall), float64(update.wall), dur)
		b.ReportMetric(poll.requests, "requests/poll")
		b.ReportMetric(poll.sent, "bytes/poll")
		b.ReportMetric(float64(poll.cpu.Microseconds()), "cpu-µs/poll")
		b.ReportMetric(poll.sent/first.sent, "bytes-poll/first")
	}
}

// cost is what some git work cost, divided by n.
type cost struct {
	requests, sent, received float64
	cpu, serverCPU, wall     time.Duration
}

func measure(repo *gitserver.Repo, n int, work func()) cost {
	reqBefore, trafficBefore := repo.Requests(), repo.Traffic()
	self, children := rusage(syscall.RUSAGE_SELF), rusage(syscall.RUSAGE_CHILDREN)
	start := time.Now()
	work()
	wall := time.Since(start)
	reqAfter, trafficAfter := repo.Requests(), repo.Traffic()
	requests := (reqAfter.RefListings + reqAfter.LsRefs + reqAfter.Fetches) - (reqBefore.RefListings + reqBefore.LsRefs + reqBefore.Fetches)
	per := func(d time.Duration) time.Duration { return d / time.Duration(n) }
	return cost{
		requests:  float64(requests) / float64(n),
		sent:      float64(trafficAfter.Sent-trafficBefore.Sent) / float64(n),
		received:  float64(trafficAfter.Received-trafficBefore.Received) / float64(n),
		cpu:       per(rusage(syscall.RUSAGE_SELF) - self),
		serverCPU: per(rusage(syscall.RUSAGE_CHILDREN) - children),
		wall:      per(wall),
	}
}

// rusage returns the user and system CPU time of who (this process, or its
// children that have been waited for).
func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func newBenchSource(b *testing.B) *source.Source {
	b.Helper()
	s, err := source.New(source.Options{CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func benchFetch(b *testing.B, s *source.Source, req source.Request) {
	b.Helper()
	if _, err := s.Fetch(b.Context(), req); err != nil {
		b.Fatal(err)
	}
}
