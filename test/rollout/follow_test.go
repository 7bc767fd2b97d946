package rollout

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// crashStatus is what a kubelet reports of a pod whose container app began to
// crash after it ran: the pod stays Running, not ready, its container waiting in
// CrashLoopBackOff. The tests write it through the pod's status subresource (kwok
// only plays the first start of a pod).
const crashStatus = `{
  "conditions": [
    {"type": "PodScheduled", "status": "True"},
    {"type": "Initialized", "status": "True"},
    {"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
    {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady"}
  ],
  "containerStatuses": [{
    "name": "app", "image": "registry.k8s.io/pause:3.10", "imageID": "", "ready": false, "started": false, "restartCount": 4,
    "lastState": {"terminated": {"exitCode": 2, "reason": "Error", "startedAt": null, "finishedAt": null}},
    "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 1m20s restarting failed container=app"}}
  }]
}`

// TestAHealthyWorkloadThatBreaksIsDegradedAtOnce: a Deployment the Sync judged
// Healthy, whose pod starts crashing, makes the Sync Degraded without a new commit
// and well before its interval (an hour here): the Deployment's status change is
// followed although the Sync last judged it Healthy.
func TestAHealthyWorkloadThatBreaksIsDegradedAtOnce(t *testing.T) {
	a := startAgent(t, agentOptions{})
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo, commit := startRepo(t, map[string]string{"web.yaml": deployment("1", 1, nil)})
	s := a.newSync(t, ns, repo)
	a.waitHealth(t, s, commit, v1alpha1.HealthHealthy)

	setStatus(t, a.Client, podKind, ns, firstPod(t, a.Client, ns, "web"), crashStatus)
	got := a.waitHealth(t, s, commit, v1alpha1.HealthDegraded)
	if r, _ := resource(got.Status, "Deployment", "web"); !strings.Contains(r.Message, "container app: CrashLoopBackOff") {
		t.Errorf("Deployment/web says %q, want it to name the crashing container", r.Message)
	}
}

// BenchmarkFollowingHealthyWorkloads measures what following the status of
// Healthy workloads costs and brings: a Sync of 10 Deployments of 2 replicas on
// kwok, Healthy; then the reconciles and API requests of the agent in a quiet
// window of 20 s, and those caused by 10 pods replaced (one per Deployment,
// deleted; its ReplicaSet creates another), counted until 5 s after every
// Deployment is available again; and how long after a pod of a Healthy Deployment
// starts crashing the Sync says Degraded. Each runs with the status of Healthy
// workloads followed (now) and without (before), one agent after the other. Run
// with -benchtime=1x.
func BenchmarkFollowingHealthyWorkloads(b *testing.B) {
	const deployments, quiet = 10, 20 * time.Second
	var files = map[string]string{}
	for i := range deployments {
		files[fmt.Sprintf("web%d.yaml", i)] = strings.ReplaceAll(deployment("1", 2, nil), "web", fmt.Sprintf("web%d", i))
	}
	for b.Loop() {
		for _, opts := range []agentOptions{{}, {onlyUnsettledStatus: true}} {
			name := "status of Healthy workloads followed (now)"
			if opts.onlyUnsettledStatus {
				name = "status of unsettled objects only (before)"
			}
			m := measureFollowing(b, opts, files, deployments, quiet)
			fmt.Fprintf(os.Stdout, "\n%s:\n  nothing changing for %s: %d reconciles, %d requests\n  %d pods replaced: %d reconciles, %d requests\n  pod crashing → Sync Degraded: %s\n",
				name, quiet, m.quiet.reconciles, m.quiet.requests, deployments, m.churn.reconciles, m.churn.requests, m.lag)
		}
	}
}

type followCost struct{ reconciles, requests int64 }

type followMeasure struct {
	quiet, churn followCost
	lag          string
}

func measureFollowing(b *testing.B, opts agentOptions, files map[string]string, deployments int, quiet time.Duration) followMeasure {
	a := startAgent(b, opts)
	defer a.Stop()
	ns := controlplane.NewNamespace(b, controlplane.Shared(b).Config())
	repo := gitserver.NewLocalRepo(b, "app")
	repo.Commit(b, prefixed(files), "first")
	s := a.newSync(b, ns, repo)
	a.WaitFor(b, s, "Healthy", func(s *v1alpha1.Sync) bool {
		return s.Status.LastAppliedRevision != "" && s.Status.Health == v1alpha1.HealthHealthy
	})
	cost := func(since followCost) followCost {
		return followCost{int64(a.reconciles(b, ns)) - since.reconciles, a.requests.Load() - since.requests}
	}
	var m followMeasure

	m.quiet = cost(followCost{})
	time.Sleep(quiet)
	m.quiet = cost(m.quiet)

	m.churn = cost(followCost{})
	for i := range deployments {
		pod := &corev1.Pod{}
		pod.Namespace, pod.Name = ns, firstPod(b, a.Client, ns, fmt.Sprintf("web%d", i))
		harness.Must(b, a.Client.Delete(b.Context(), pod))
	}
	harness.Eventually(b, waitTimeout, "every Deployment ready again", func(ctx context.Context) (bool, error) {
		list := &appsv1.DeploymentList{}
		if err := a.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, d := range list.Items {
			if d.Status.AvailableReplicas != 2 || d.Status.Replicas != 2 {
				return false, fmt.Errorf("%s: %d of %d available", d.Name, d.Status.AvailableReplicas, d.Status.Replicas)
			}
		}
		return true, nil
	})
	// The reconciles the replaced pods cause come within a moment of the
	// Deployments' last status write; a window after it counts them all.
	time.Sleep(5 * time.Second)
	m.churn = cost(m.churn)

	began := time.Now()
	setStatus(b, a.Client, podKind, ns, firstPod(b, a.Client, ns, "web0"), crashStatus)
	ctx, cancel := context.WithTimeout(b.Context(), 30*time.Second)
	defer cancel()
	m.lag = "not within 30 s (the Sync's interval is an hour)"
	for ctx.Err() == nil {
		got := &v1alpha1.Sync{}
		if err := a.Client.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
			if ctx.Err() != nil {
				break
			}
			b.Fatal(err)
		}
		if got.Status.Health == v1alpha1.HealthDegraded {
			m.lag = time.Since(began).Round(time.Millisecond).String()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return m
}
