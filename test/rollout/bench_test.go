package rollout

import (
	"errors"
	"fmt"
	"os"
	"slices"
	gosync "sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/health"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// BenchmarkHealthFollowsRollout measures how long after its last object became
// ready a Sync reports Healthy: 20 rollouts of a one-replica Deployment (with
// minReadySeconds: 3) on kwok's fake node, each a new Sync in a namespace of its own, four at a time. The
// Deployment's readiness is taken from a watch of it (the moment health.Compute
// first calls it Healthy), the Sync's from a watch of the Sync. It runs twice: with
// the status watch of objects that are not Healthy yet (Tether now), and with
// status changes ignored, so that only the progressing requeue of ten seconds
// re-assesses health (Tether before). The figures are medians; run with
// -benchtime=1x (make bench does).
func BenchmarkHealthFollowsRollout(b *testing.B) {
	const rollouts, lanes = 20, 4
	repo := gitserver.NewLocalRepo(b, "app")
	// A pod is available three seconds after it is ready, as an app that takes a
	// moment to warm up: the Deployment turns ready by a status change alone, well
	// after the changes of its metadata (the revision annotation) at the start.
	repo.Commit(b, prefixed(map[string]string{"web.yaml": deployment("1", 1, nil, "minReadySeconds: 3")}), "web")
	for b.Loop() {
		watched := measureRollouts(b, agentOptions{}, repo, rollouts, lanes)
		timer := measureRollouts(b, agentOptions{ignoreStatus: true}, repo, rollouts, lanes)
		fmt.Fprintf(os.Stdout, "\nhealth after a rollout, %d rollouts of one replica on kwok, last object ready → Sync Healthy:\n", rollouts)
		fmt.Fprintf(os.Stdout, "  %-44s median %8s   p90 %8s\n", "status watch of unsettled objects (now)", median(watched).Round(time.Millisecond), p90(watched).Round(time.Millisecond))
		fmt.Fprintf(os.Stdout, "  %-44s median %8s   p90 %8s\n", "progressing requeue timer only (before)", median(timer).Round(time.Millisecond), p90(timer).Round(time.Millisecond))
		fmt.Fprintf(os.Stdout, "  the watch turns a Sync Healthy %.0f× sooner (median)\n", median(timer).Seconds()/median(watched).Seconds())
		b.ReportMetric(float64(median(watched).Milliseconds()), "watch-p50-ms")
		b.ReportMetric(float64(median(timer).Milliseconds()), "timer-p50-ms")
	}
}

// measureRollouts runs rollouts Syncs of repo against an agent started with
// opts, lanes at a time, and returns each one's lag from the Deployment ready to
// the Sync Healthy.
func measureRollouts(b *testing.B, opts agentOptions, repo *gitserver.Repo, rollouts, lanes int) []time.Duration {
	a := startAgent(b, opts)
	defer a.Stop()
	namespaces := make(chan string, rollouts)
	for range rollouts {
		namespaces <- controlplane.NewNamespace(b, controlplane.Shared(b).Config())
	}
	close(namespaces)
	var (
		mu   gosync.Mutex
		lags []time.Duration
		errs []error
		wg   gosync.WaitGroup
	)
	for range lanes {
		wg.Go(func() {
			for ns := range namespaces {
				lag, err := measureRollout(b, a, repo, ns)
				mu.Lock()
				lags, errs = append(lags, lag), append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	harness.Must(b, errors.Join(errs...))
	return lags
}

// measureRollout creates a Sync in ns and returns how long after its Deployment
// was ready the Sync said Healthy.
func measureRollout(b *testing.B, a *agent, repo *gitserver.Repo, ns string) (time.Duration, error) {
	cfg := controlplane.Shared(b).Config()
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
		return 0, err
	}
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return 0, err
	}
	deployments, err := wc.Watch(b.Context(), &appsv1.DeploymentList{}, client.InNamespace(ns))
	if err != nil {
		return 0, err
	}
	defer deployments.Stop()
	syncs, err := wc.Watch(b.Context(), &v1alpha1.SyncList{}, client.InNamespace(ns))
	if err != nil {
		return 0, err
	}
	defer syncs.Stop()
	a.newSync(b, ns, repo)

	var ready, healthy time.Time
	deadline := time.After(waitTimeout)
	for ready.IsZero() || healthy.IsZero() {
		select {
		case e, ok := <-deployments.ResultChan():
			if !ok {
				return 0, fmt.Errorf("%s: the watch of Deployments ended", ns)
			}
			if ready.IsZero() && deploymentReady(e) {
				ready = time.Now()
			}
		case e, ok := <-syncs.ResultChan():
			if !ok {
				return 0, fmt.Errorf("%s: the watch of Syncs ended", ns)
			}
			if s, ok := e.Object.(*v1alpha1.Sync); ok && healthy.IsZero() && s.Status.Health == v1alpha1.HealthHealthy {
				healthy = time.Now()
			}
		case <-deadline:
			s := &v1alpha1.Sync{}
			if err := a.Client.Get(b.Context(), client.ObjectKey{Namespace: ns, Name: "app"}, s); err != nil {
				return 0, fmt.Errorf("%s: no Healthy Sync within %s: %w", ns, waitTimeout, err)
			}
			return 0, fmt.Errorf("%s: no Healthy Sync within %s (Deployment ready: %t): %s", ns, waitTimeout, !ready.IsZero(), harness.Describe(s))
		}
	}
	return healthy.Sub(ready), nil
}

func deploymentReady(e watch.Event) bool {
	d, ok := e.Object.(*appsv1.Deployment)
	if !ok {
		return false
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		return false
	}
	obj := &unstructured.Unstructured{Object: raw}
	obj.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	return health.Compute(obj).Code == v1alpha1.HealthHealthy
}

func median(d []time.Duration) time.Duration { return percentile(d, 50) }
func p90(d []time.Duration) time.Duration    { return percentile(d, 90) }

func percentile(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}
