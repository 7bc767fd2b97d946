package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/workload"
)

// syncWrites is how many of each request BenchmarkAPIServerCostOfASyncsOwnWrites
// sends.
const syncWrites = 1000

// BenchmarkAPIServerCostOfASyncsOwnWrites says what a Sync's own writes cost the
// API server, beside the objects it applies: what a fleet of small Syncs pays on
// top of the floor. The shipped binary first syncs one team of the fleet benchmark
// (ten objects) and is stopped; that Sync's status is the model. Then, with no agent
// running, 1,000 each of what a first sync writes of a Sync are sent from 8
// goroutines, one kind after the other: the Sync's creation (the user's), the
// finalizer (a merge patch with optimistic lock, as the agent sends it), the
// write-ahead inventory and the final status (status merge patches), an Event, and,
// to compare, a server-side apply of a ConfigMap (one of the floor's objects). It
// prints the CPU time of kube-apiserver, etcd and the client for each, and reports
// each kind's kube-apiserver CPU as a ratio to the ConfigMap apply's.
func BenchmarkAPIServerCostOfASyncsOwnWrites(b *testing.B) {
	cp := controlplane.Shared(b)
	c := unthrottledClient(b)
	for b.Loop() {
		model := firstSyncedTeam(b, cp, c)
		ns := controlplane.NewNamespace(b, cp.Config())
		syncs := make([]*v1alpha1.Sync, syncWrites)
		writes := []struct {
			name string
			send func(ctx context.Context, i int) error
		}{
			{"create the Sync", func(ctx context.Context, i int) error {
				syncs[i] = gitSync(ns, workload.TeamName(i), "https://git.example/monorepo.git", "teams/"+workload.TeamName(i), time.Hour)
				return c.Create(ctx, syncs[i])
			}},
			{"add the finalizer", func(ctx context.Context, i int) error {
				base := syncs[i].DeepCopy()
				syncs[i].Finalizers = append(syncs[i].Finalizers, v1alpha1.Finalizer)
				return c.Patch(ctx, syncs[i], client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
			}},
			{"write the inventory ahead", func(ctx context.Context, i int) error {
				base := syncs[i].DeepCopy()
				syncs[i].Status.Objects = model.Status.Objects
				return c.Status().Patch(ctx, syncs[i], client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
			}},
			{"write the final status", func(ctx context.Context, i int) error {
				base := syncs[i].DeepCopy()
				syncs[i].Status = *model.Status.DeepCopy()
				return c.Status().Patch(ctx, syncs[i], client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
			}},
			{"record an Event", func(ctx context.Context, i int) error {
				now := metav1.Now()
				return c.Create(ctx, &corev1.Event{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: syncs[i].Name + "."},
					InvolvedObject: corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Sync",
						Namespace: ns, Name: syncs[i].Name, UID: syncs[i].UID},
					Type: corev1.EventTypeNormal, Reason: v1alpha1.ReasonApplied, Count: 1, FirstTimestamp: now, LastTimestamp: now,
					Message: "Applied revision " + model.Status.LastAppliedRevision + ": 10 created, 0 configured, 0 unchanged, 0 pruned",
					Source:  corev1.EventSource{Component: "tether"},
				})
			}},
			{"apply a ConfigMap (the floor's)", func(ctx context.Context, i int) error {
				cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": fmt.Sprintf("object-%04d", i), "namespace": ns}, "data": map[string]any{"key": "value"}}}
				return c.Patch(ctx, cm, client.Apply, client.FieldOwner("bench"), client.ForceOwnership)
			}},
		}
		spent := make([]map[string]time.Duration, len(writes))
		fmt.Fprintf(os.Stdout, "\n%d of each, 8 at once; the model Sync holds %d objects (its status as the agent wrote it):\n", syncWrites, model.Status.Summary.Total)
		for k, w := range writes {
			cpu := meterCPU(b, benchPids(cp, os.Getpid(), "client"))
			start := time.Now()
			sendAll(b, syncWrites, w.send)
			spent[k] = cpu.stop()
			fmt.Fprintf(os.Stdout, "  %-34s %8s  %s\n", w.name, time.Since(start).Round(time.Millisecond), formatCPU(spent[k]))
		}
		floor := spent[len(writes)-1]["kube-apiserver"].Seconds()
		for k, name := range []string{"create/apply", "finalizer/apply", "inventory/apply", "status/apply", "event/apply"} {
			b.ReportMetric(spent[k]["kube-apiserver"].Seconds()/max(floor, 0.01), name)
		}
	}
}

// firstSyncedTeam runs the shipped binary until one Sync of a team of the fleet
// benchmark is Ready, stops it, and returns that Sync as the agent left it.
func firstSyncedTeam(b *testing.B, cp *controlplane.ControlPlane, c client.Client) *v1alpha1.Sync {
	ns := controlplane.NewNamespace(b, cp.Config())
	repo := gitserver.Start(b, gitserver.Options{}).CreateRepo(b, "monorepo")
	commit := repo.Commit(b, workload.Teams(1), "one team")
	a := launchAgent(b, cp.KubeconfigPath())
	ready := waitAllReady(b, ns, 1, commit, waitTimeout)
	team := workload.TeamName(0)
	harness.Must(b, c.Create(b.Context(), gitSync(ns, team, repo.URL(), "teams/"+team, time.Hour)))
	ready()
	model := &v1alpha1.Sync{}
	harness.Must(b, c.Get(b.Context(), client.ObjectKey{Namespace: ns, Name: team}, model))
	harness.Must(b, a.cmd.Process.Kill())
	if model.Status.Summary == nil {
		b.Fatal("the model Sync has no summary in its status")
	}
	return model
}

// sendAll calls send for 0..n-1 from floorWorkers goroutines, as the floor sends
// its requests, and fails tb on the first error.
func sendAll(tb testing.TB, n int, send func(ctx context.Context, i int) error) {
	tb.Helper()
	harness.Must(tb, workload.EachIndex(n, floorWorkers, func(i int) error { return send(tb.Context(), i) }))
}
