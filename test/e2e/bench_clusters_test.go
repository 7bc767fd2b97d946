package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/workload"
)

// Knobs of BenchmarkShippedBinaryRemoteClusters.
const (
	// benchClustersEnv sets how many remote control planes run on loopback.
	benchClustersEnv = "TETHER_BENCH_CLUSTERS"
	// defaultBenchClusters is as many as run beside the hub on two cores (five
	// etcds and kube-apiservers with the agent) without their idle load
	// swamping the agent's; the figure is 10, reached on paper.
	defaultBenchClusters = 4
	// benchClusterSyncsEnv sets the number of Syncs of each side.
	benchClusterSyncsEnv = "TETHER_BENCH_CLUSTER_SYNCS"
	// defaultBenchClusterSyncs is the figure.
	defaultBenchClusterSyncs = 100
	// paperClusters is the number of remote clusters, which the
	// benchmark's model extrapolates to.
	paperClusters = 10
)

// BenchmarkShippedBinaryRemoteClusters measures what serving other clusters
// costs one agent (issue 47): the same Syncs (TETHER_BENCH_CLUSTER_SYNCS, 100
// by default, over workload.Teams: ten objects each, two apps and two
// ConfigMaps) applied to the agent's own cluster (home), then spread evenly
// over K remote control planes on loopback (TETHER_BENCH_CLUSTERS, 4 by
// default), each registered as an operator does (a Secret labelled
// tether.dev/cluster of the agent's --cluster-namespace, allowing every
// namespace; spec.destination.cluster names it). Each side has an agent of
// its own (the shipped binary at its default flags, confined to the Syncs'
// namespace with --watch-namespaces) and a repository of its own with the same
// files, one after the other, as BenchmarkShippedBinarySyncSetAgainstHandWrittenSyncs
// runs its two sides; the remotes run during both, so both share the machine
// with their idle load.
//
// It reports, for each side, the time from the first Sync's creation until
// every Sync is Ready at the commit, and its ratio to home's, with the CPU
// time the agent and every control plane spent meanwhile (on a machine shared
// with other work, their sum's ratio is steadier than that of wall times); the
// requests the agent sent to each cluster (client-go's count, by API server)
// during the first sync and over convergedIntervals intervals from one
// interval after it (the Syncs' interval, TETHER_BENCH_SYNC_INTERVAL, 10s by
// default), with those each API server answered about the managed kinds in
// that window; and the agent's peak RSS (VmHWM), with the RSS added per remote
// cluster: (remote side − home side) / K.
//
// The model that takes it to the 10 clusters on paper, the same S
// Syncs spread over N remotes: what the agent holds and sends for a Sync is the
// same at home and away, and what it adds for a cluster (its RESTMapper and
// discovery, a cache with an informer per kind applied there, a client and
// applier, a circuit breaker, the connection made under Clusters' lock, one
// cluster after another) does not depend on how many Syncs use it; so, linear
// in N through the two points measured (N = 0 is home),
//
//	RSS(N)   = RSS(home) + N × (RSS(K) − RSS(home)) / K
//	first(N) = first(home) + N × (first(K) − first(home)) / K
//	converged requests(N) = hub(S) + N × remote(K) / K
//
// where hub(S) is what the Syncs cost the hub while nothing changes (0 since
// a converged Sync uses the kubeconfig it read while the watch of its Secret
// says it is unchanged; one GET per Sync and interval before that), and
// remote(K) / K what one remote is sent in the window. first(N) errs high in one respect: here the remotes' API servers
// share the agent's two cores, where N clusters would each have their own.
// Each informer also re-opens its watch every 5 to 10 minutes (client-go's
// reflector), a few requests per cluster that a window of 30 s does not see.
func BenchmarkShippedBinaryRemoteClusters(b *testing.B) {
	n := envInt(b, benchClusterSyncsEnv, defaultBenchClusterSyncs)
	k := envInt(b, benchClustersEnv, defaultBenchClusters)
	interval := envDuration(b, benchIntervalEnv, defaultBenchInterval)
	files := workload.Teams(n)
	hub := controlplane.Shared(b)
	remotes := controlplane.StartMany(b, k, controlplane.Options{})
	for b.Loop() {
		c := unthrottledClient(b)
		git := gitserver.Start(b, gitserver.Options{})
		clusters := append([]*controlplane.ControlPlane{hub}, remotes...)

		homeNS := controlplane.NewNamespace(b, hub.Config())
		homeRepo := git.CreateRepo(b, "home")
		homeCommit := homeRepo.Commit(b, files, fmt.Sprintf("%d teams", n))
		home := measureClusterSide(b, c, clusters, homeNS, homeCommit, n, interval, nil, func(ctx context.Context, i int) error {
			return c.Create(ctx, orphanTeamSync(homeNS, homeRepo.URL(), i, interval))
		})

		registry := controlplane.NewNamespace(b, hub.Config())
		awayNS := controlplane.NewNamespace(b, hub.Config())
		names := registerRemotes(b, c, registry, awayNS, remotes)
		awayRepo := git.CreateRepo(b, "away")
		awayCommit := awayRepo.Commit(b, files, fmt.Sprintf("%d teams", n))
		away := measureClusterSide(b, c, clusters, awayNS, awayCommit, n, interval, []string{"--cluster-namespace", registry}, func(ctx context.Context, i int) error {
			s := orphanTeamSync(awayNS, awayRepo.URL(), i, interval)
			s.Spec.Destination.Cluster = names[i%k]
			return c.Create(ctx, s)
		})
		reportClustersRun(b, n, k, interval, home, away)
	}
}

// orphanTeamSync is the Sync of team i of workload.Teams in ns, whose objects
// stay when it goes (so that removeFleet takes no time over them).
func orphanTeamSync(ns, url string, i int, interval time.Duration) *v1alpha1.Sync {
	team := workload.TeamName(i)
	s := gitSync(ns, team, url, "teams/"+team, interval)
	s.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan
	return s
}

// registerRemotes registers each remote as a cluster of the agent's
// --cluster-namespace registry, allowing every namespace, and creates the
// namespace ns there; it returns the clusters' names, in order.
func registerRemotes(tb testing.TB, c client.Client, registry, ns string, remotes []*controlplane.ControlPlane) []string {
	tb.Helper()
	names := make([]string, len(remotes))
	for i, r := range remotes {
		names[i] = fmt.Sprintf("remote-%d", i)
		kubeconfig, err := os.ReadFile(r.KubeconfigPath())
		harness.Must(tb, err)
		harness.Must(tb, c.Create(tb.Context(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: registry, Name: names[i],
				Labels:      map[string]string{v1alpha1.ClusterLabel: "true"},
				Annotations: map[string]string{v1alpha1.AllowedNamespacesAnnotation: "*"}},
			Data: map[string][]byte{v1alpha1.ClusterKubeConfigKey: kubeconfig},
		}))
		rc, err := client.New(r.Config(), client.Options{})
		harness.Must(tb, err)
		harness.Must(tb, rc.Create(tb.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	return names
}

// clusterSide is what one side of the remote-clusters benchmark measured. Its
// slices hold a figure per cluster: the hub (the agent's own) first, then the
// remotes.
type clusterSide struct {
	first time.Duration
	// firstSync and converged are what was counted during the first sync and
	// over the converged window.
	firstSync, converged clusterSample
	// convergedByRequest is the requests the remotes' API servers answered in
	// the window, all clients and all remotes together, by kind.
	convergedByRequest map[string]float64
	// firstCPU is the CPU time spent during the first sync, by the agent
	// ("tether") and each control plane's processes ("0 etcd" is the hub's).
	firstCPU map[string]time.Duration
	rss      int64
}

// clusterPids names the processes whose CPU time a side's first sync counts:
// the agent's (pid) and each control plane's, prefixed with its index.
func clusterPids(clusters []*controlplane.ControlPlane, pid int) map[string]int {
	pids := map[string]int{"tether": pid}
	for i, cp := range clusters {
		for name, p := range cp.Pids() {
			pids[fmt.Sprintf("%d %s", i, name)] = p
		}
	}
	return pids
}

// cpuOf sums the CPU time the agent, the hub and the remotes spent during the
// first sync.
func (side clusterSide) cpuOf() (agent, hub, remotes time.Duration) {
	for name, d := range side.firstCPU {
		switch {
		case name == "tether":
			agent += d
		case strings.HasPrefix(name, "0 "):
			hub += d
		default:
			remotes += d
		}
	}
	return agent, hub, remotes
}

// measureClusterSide starts an agent confined to ns with flags, calls create
// for each of the n Syncs, and measures until all are Ready at commit, then
// over the converged window; it removes the Syncs and stops the agent before
// it returns.
func measureClusterSide(b *testing.B, c client.Client, clusters []*controlplane.ControlPlane, ns, commit string, n int, interval time.Duration, flags []string, create func(ctx context.Context, i int) error) clusterSide {
	b.Helper()
	a := launchAgent(b, clusters[0].KubeconfigPath(), append([]string{"--watch-namespaces", ns}, flags...)...)
	waitQueueMetrics(b, a)
	allReady := waitAllReady(b, ns, n, commit, waitTimeout+time.Duration(n)*time.Second)
	before := sampleClusters(b, a, clusters)
	meter := meterCPU(b, clusterPids(clusters, a.cmd.Process.Pid))
	start := time.Now()
	sendAll(b, n, create)
	allReady()
	side := clusterSide{first: time.Since(start), firstSync: sampleClusters(b, a, clusters).minus(before), firstCPU: meter.stop()}
	var opened, closed clusterSample
	overTheConvergedWindow(b, a, interval, func(closing bool) {
		if closing {
			closed = sampleClusters(b, a, clusters)
		} else {
			opened = sampleClusters(b, a, clusters)
		}
	})
	side.converged = closed.minus(opened)
	side.convergedByRequest = map[string]float64{}
	for i := 1; i < len(clusters); i++ {
		for kind, count := range side.converged.byRequest[i] {
			side.convergedByRequest[kind] += count
		}
	}
	if still := countReady(b, c, ns, commit); still != n {
		b.Fatalf("%d of %d Syncs Ready at %s after the converged window", still, n, commit)
	}
	side.rss = peakRSS(b, a.cmd.Process.Pid)
	removeFleet(b, c, ns)
	stopAgent(b, a)
	return side
}

// clusterSample is what the agent and each cluster's API server have counted
// at one moment, a figure per cluster (the hub first).
type clusterSample struct {
	// sent is the requests the agent sent to the cluster's API server
	// (client-go's count, whose host label tells the clusters apart).
	sent []float64
	// managed is the requests the cluster's API server answered about the
	// kinds the Syncs manage, watches aside.
	managed []float64
	// byRequest is the requests the cluster's API server answered, by kind
	// (all clients: the API server's own too).
	byRequest []map[string]float64
}

func sampleClusters(tb testing.TB, a *agent, clusters []*controlplane.ControlPlane) clusterSample {
	tb.Helper()
	m, err := scrapeAgent(a)
	harness.Must(tb, err)
	s := clusterSample{}
	for _, cp := range clusters {
		host := strings.TrimPrefix(cp.Host(), "https://")
		api, err := scrapeAPIServer(cp.Config())
		harness.Must(tb, err)
		s.sent = append(s.sent, m.sum("rest_client_requests_total", func(l map[string]string) bool { return l["host"] == host }))
		s.managed = append(s.managed, api.sum("apiserver_request_total", func(l map[string]string) bool {
			return managedResources[l["resource"]] && l["verb"] != "WATCH"
		}))
		s.byRequest = append(s.byRequest, api.byRequest())
	}
	return s
}

// minus is what was counted between earlier and s.
func (s clusterSample) minus(earlier clusterSample) clusterSample {
	out := clusterSample{}
	for i := range s.sent {
		out.sent = append(out.sent, s.sent[i]-earlier.sent[i])
		out.managed = append(out.managed, s.managed[i]-earlier.managed[i])
		kinds := map[string]float64{}
		for kind, v := range s.byRequest[i] {
			if d := v - earlier.byRequest[i][kind]; d > 0 {
				kinds[kind] = d
			}
		}
		out.byRequest = append(out.byRequest, kinds)
	}
	return out
}

// sumRemotes sums a per-cluster figure over the remote clusters.
func sumRemotes(perCluster []float64) float64 {
	total := 0.0
	for _, v := range perCluster[1:] {
		total += v
	}
	return total
}

func reportClustersRun(b *testing.B, n, k int, interval time.Duration, home, away clusterSide) {
	out := os.Stdout
	mib := func(rss int64) float64 { return float64(rss) / (1 << 20) }
	perCluster := (mib(away.rss) - mib(home.rss)) / float64(k)
	firstPerCluster := (away.first.Seconds() - home.first.Seconds()) / float64(k)
	remoteQuiet := sumRemotes(away.converged.sent)
	fmt.Fprintf(out, "\nshipped binary at default flags, %d Syncs × 10 objects: in the agent's own cluster, then spread over %d remote control planes on loopback, same run:\n", n, k)
	fmt.Fprintf(out, "  %-48s %10s   %6.2f× home\n", "home: first Sync created → all Ready", home.first.Round(time.Millisecond), 1.0)
	fmt.Fprintf(out, "  %-48s %10s   %6.2f× home\n", fmt.Sprintf("%d remotes: first Sync created → all Ready", k), away.first.Round(time.Millisecond), away.first.Seconds()/home.first.Seconds())
	for _, side := range []struct {
		name string
		clusterSide
	}{{"home", home}, {fmt.Sprintf("%d remotes", k), away}} {
		agent, hubCPU, remoteCPU := side.cpuOf()
		fmt.Fprintf(out, "  CPU time during the first sync, %s: agent %s, the hub's etcd and kube-apiserver %s, the remotes' %s\n",
			side.name, agent.Round(time.Millisecond), hubCPU.Round(time.Millisecond), remoteCPU.Round(time.Millisecond))
	}
	fmt.Fprintf(out, "  first sync, requests the agent sent: home %.0f; hub %.0f and per remote %s (%.0f in all)\n",
		home.firstSync.sent[0], away.firstSync.sent[0], formatCounts(away.firstSync.sent[1:]), away.firstSync.sent[0]+sumRemotes(away.firstSync.sent))
	fmt.Fprintf(out, "  converged (%d intervals of %s): requests the agent sent: home %.0f; hub %.0f and per remote %s (%.0f in all)\n",
		convergedIntervals, interval, home.converged.sent[0], away.converged.sent[0], formatCounts(away.converged.sent[1:]), away.converged.sent[0]+remoteQuiet)
	fmt.Fprintf(out, "    requests to managed objects the API servers answered: home %.0f; per remote %s\n", home.converged.managed[0], formatCounts(away.converged.managed[1:]))
	fmt.Fprintf(out, "    the hub's API server answered (all clients): home side: %s; remote side: %s\n",
		requestsByKind(home.converged.byRequest[0]), requestsByKind(away.converged.byRequest[0]))
	fmt.Fprintf(out, "    the remotes' API servers answered (all clients, %d remotes together): %s\n", k, requestsByKind(away.convergedByRequest))
	fmt.Fprintf(out, "  agent peak RSS: home %.0f MiB, %d remotes %.0f MiB: %+.1f MiB per remote cluster\n", mib(home.rss), k, mib(away.rss), perCluster)
	fmt.Fprintf(out, "  on paper, %d remote clusters (the model of the benchmark's doc): peak RSS %.0f MiB, first sync %s, converged requests %.0f (hub %.0f, remotes %.0f)\n",
		paperClusters, mib(home.rss)+paperClusters*perCluster, (home.first + time.Duration(paperClusters*firstPerCluster*float64(time.Second))).Round(time.Millisecond),
		away.converged.sent[0]+remoteQuiet*paperClusters/float64(k), away.converged.sent[0], remoteQuiet*paperClusters/float64(k))
	b.ReportMetric(home.first.Seconds(), "home-all-ready-s")
	b.ReportMetric(away.first.Seconds(), "remote-all-ready-s")
	b.ReportMetric(away.first.Seconds()/home.first.Seconds(), "remote-all-ready/home")
	b.ReportMetric(totalCPU(away.firstCPU).Seconds()/totalCPU(home.firstCPU).Seconds(), "remote-first-cpu/home")
	b.ReportMetric(home.converged.sent[0], "home-converged-requests")
	b.ReportMetric(away.converged.sent[0], "hub-converged-requests")
	b.ReportMetric(remoteQuiet/float64(k), "converged-requests/remote")
	b.ReportMetric(sumRemotes(away.firstSync.sent)/float64(k), "first-sync-requests/remote")
	b.ReportMetric(mib(home.rss), "home-peak-RSS-MiB")
	b.ReportMetric(mib(away.rss), "remote-peak-RSS-MiB")
	b.ReportMetric(perCluster, "RSS-MiB/remote")
}

// formatCounts prints a count per cluster.
func formatCounts(counts []float64) string {
	parts := make([]string, len(counts))
	for i, v := range counts {
		parts[i] = fmt.Sprintf("%.0f", v)
	}
	return strings.Join(parts, " / ")
}
