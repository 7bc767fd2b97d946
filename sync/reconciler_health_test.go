package sync_test

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	tethersync "tether.dev/tether/sync"
	"tether.dev/tether/test/apicount"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// stuckJob is a Job whose pod (made by the test: no controller runs here) cannot
// pull its image.
const stuckJob = `apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: app, image: registry.invalid/migrate:v1}]
`

// TestHealthReadsPodsAsTheSyncsAccount: the pods that explain a stuck workload are
// listed as the Sync's account, like everything else read for it. An account that
// may not list pods gets a health that names no pod, never one read with the
// agent's own rights.
func TestHealthReadsPodsAsTheSyncsAccount(t *testing.T) {
	a := startAgent(t, tethersync.DefaultTenancyOptions())
	cfg := controlplane.Shared(t).Config()
	team := controlplane.NewNamespace(t, cfg)
	account(t, a.Client, team, "deployer")
	jobs := rbacv1.PolicyRule{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"*"}}
	grant(t, a.Client, team, team, "deployer", append(configMapsAll, jobs)...) // grant waits on the first rule
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "tenant")
	commit := repo.Commit(t, map[string]string{"apps/job.yaml": stuckJob}, "a job")
	s := a.newSync(t, team, repo.URL(), func(s *v1alpha1.Sync) { s.Spec.ServiceAccountName = "deployer" })
	a.WaitApplied(t, s, commit)
	pod := stuckPodOf(t, a.Client, team, "migrate")

	jobHealth := func(s *v1alpha1.Sync) (v1alpha1.HealthStatusCode, string) {
		for _, r := range s.Status.Resources {
			if r.Kind == "Job" && r.Name == "migrate" {
				return r.Health, r.Message
			}
		}
		return "", ""
	}

	t.Run("an account that may not list pods gets a health that names none", func(t *testing.T) {
		a.Reconcile(t, s)
		got := &v1alpha1.Sync{}
		harness.Must(t, a.Client.Get(t.Context(), client.ObjectKeyFromObject(s), got))
		if code, msg := jobHealth(got); strings.Contains(msg, pod) || code == v1alpha1.HealthDegraded {
			t.Errorf("Job health %s %q: the pod was read with rights the account does not have", code, msg)
		}
	})

	t.Run("an account that may list pods names the pod that holds the Job up", func(t *testing.T) {
		grant(t, a.Client, team, team, "deployer", append(configMapsAll, jobs, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}})...)
		waitAllowed(t, a.Client, team, team, "deployer", rbacv1.PolicyRule{Resources: []string{"pods"}, Verbs: []string{"list"}})
		a.Reconcile(t, s)
		a.WaitFor(t, s, "the Job Degraded, naming its pod", func(s *v1alpha1.Sync) bool {
			code, msg := jobHealth(s)
			return code == v1alpha1.HealthDegraded && strings.Contains(msg, "pod "+pod) && strings.Contains(msg, "ImagePullBackOff")
		})
	})
}

// stuckPodOf creates the pod a Job's controller would, selected by the Job, with a
// container that cannot pull its image, and returns its name.
func stuckPodOf(t *testing.T, c client.Client, ns, job string) string {
	t.Helper()
	j := &batchv1.Job{}
	harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: job}, j))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job + "-x7k2p", Labels: j.Spec.Selector.MatchLabels},
		Spec:       *j.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.ServiceAccountName = "deployer" // no controller makes the namespace's default account here
	harness.Must(t, c.Create(t.Context(), pod))
	pod.Status.Phase = corev1.PodPending
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "app", Image: "registry.invalid/migrate:v1",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}},
	}}
	harness.Must(t, c.Status().Update(t.Context(), pod))
	harness.Eventually(t, waitTimeout, "the pod's status to be stored", func(ctx context.Context) (bool, error) {
		got := &corev1.Pod{}
		err := c.Get(ctx, client.ObjectKeyFromObject(pod), got)
		return err == nil && len(got.Status.ContainerStatuses) == 1, err
	})
	return pod.Name
}

// TestAStuckWorkloadsPodsComeFromAWatch: a workload that stays stuck is assessed
// again at every reconcile, and its pods come from a watch of their namespace: ten
// reconciles cost at most the watch's one LIST of pods, not ten, and a change of
// the pod reaches the next assessment through the watch.
func TestAStuckWorkloadsPodsComeFromAWatch(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	account(t, a.Client, ns, "deployer") // the account stuckPodOf's pod names
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "stuck")
	commit := repo.Commit(t, map[string]string{"apps/job.yaml": stuckJob}, "a job")
	s := a.newSync(t, ns, repo.URL())
	a.WaitApplied(t, s, commit)
	pod := stuckPodOf(t, a.Client, ns, "migrate")
	jobSays := func(text string) func(*v1alpha1.Sync) bool {
		return func(s *v1alpha1.Sync) bool {
			for _, r := range s.Status.Resources {
				if r.Kind == "Job" && r.Health == v1alpha1.HealthDegraded && strings.Contains(r.Message, "pod "+pod) && strings.Contains(r.Message, text) {
					return true
				}
			}
			return false
		}
	}

	for range 10 {
		a.Reconcile(t, s)
	}
	a.WaitFor(t, s, "the Job Degraded, naming its pod", jobSays("ImagePullBackOff"))
	if n := a.manager.Paths(apicount.List)["/api/v1/namespaces/"+ns+"/pods"]; n > 1 {
		t.Errorf("%d LISTs of the pods of %s over ten reconciles of a stuck Job, want at most the watch's one", n, ns)
	}

	t.Run("a change of the pod is seen through the watch", func(t *testing.T) {
		got := &corev1.Pod{}
		harness.Must(t, a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: pod}, got))
		got.Status.ContainerStatuses[0].State.Waiting.Reason = "ErrImagePull"
		harness.Must(t, a.Client.Status().Update(t.Context(), got))
		harness.Eventually(t, waitTimeout, "the Job's message names ErrImagePull", func(ctx context.Context) (bool, error) {
			a.Reconcile(t, s)
			cur := &v1alpha1.Sync{}
			err := a.Client.Get(ctx, client.ObjectKeyFromObject(s), cur)
			return err == nil && jobSays("ErrImagePull")(cur), err
		})
		if n := a.manager.Paths(apicount.List)["/api/v1/namespaces/"+ns+"/pods"]; n > 1 {
			t.Errorf("%d LISTs of the pods of %s, want at most the watch's one", n, ns)
		}
	})
}
