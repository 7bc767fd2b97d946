package rollout

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// deployment is the Deployment web, of one pause container named app. podAnnotations go
// on its pod template (the fault annotations of test/controlplane); spec is added
// to its spec as YAML flow mappings ("progressDeadlineSeconds: 3").
func deployment(version string, replicas int, podAnnotations map[string]string, spec ...string) string {
	ann := []string{fmt.Sprintf("version: %q", version)}
	for k, v := range podAnnotations {
		ann = append(ann, fmt.Sprintf("%q: %q", k, v))
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: %[2]d
  selector: {matchLabels: {app: %[1]s}}
%[4]s
  template:
    metadata:
      labels: {app: %[1]s}
      annotations: {%[3]s}
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{name: app, image: "registry.k8s.io/pause:3.10"}]
`, "web", replicas, strings.Join(ann, ", "), indent(spec))
}

func indent(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// startRepo returns a local repository with files committed under app/, and the
// commit.
func startRepo(t *testing.T, files map[string]string) (*gitserver.Repo, string) {
	t.Helper()
	repo := gitserver.NewLocalRepo(t, "app")
	return repo, repo.Commit(t, prefixed(files), "first")
}

func prefixed(files map[string]string) map[string]string {
	out := map[string]string{}
	for name, data := range files {
		out["app/"+name] = data
	}
	return out
}

func TestRolloutGoesProgressingThenHealthy(t *testing.T) {
	a := startAgent(t, agentOptions{})
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo, first := startRepo(t, map[string]string{"web.yaml": deployment("1", 2, nil)})
	// The Sync polls git every two seconds, to see the second commit.
	s := a.newSync(t, ns, repo, func(s *v1alpha1.Sync) { s.Spec.Source.Interval = &metav1.Duration{Duration: 2 * time.Second} })
	log := a.recordStatuses(t, s)

	t.Run("the first rollout is Progressing, then Healthy", func(t *testing.T) {
		got := a.waitHealth(t, s, first, v1alpha1.HealthHealthy)
		capture(t, a.Client, deploymentKind, ns, "web", "deployment/healthy-rolled-out", true)
		capture(t, a.Client, podKind, ns, firstPod(t, a.Client, ns, "web"), "pod/healthy-running", false)
		if c := condition(got.Status, v1alpha1.HealthyCondition); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("Healthy condition = %+v, want True", c)
		}
		if c := condition(got.Status, v1alpha1.ReconcilingCondition); c != nil {
			t.Errorf("Reconciling = %+v on a Healthy Sync, want it gone", c)
		}
		progressing, ok := log.find(func(st v1alpha1.SyncStatus) bool {
			return strings.HasSuffix(st.LastAppliedRevision, first) && st.Health == v1alpha1.HealthProgressing
		})
		if !ok {
			t.Fatalf("no status at %.12s said Progressing before Healthy", first)
		}
		checkProgressing(t, progressing)
	})

	second := repo.Commit(t, prefixed(map[string]string{"web.yaml": deployment("2", 3, nil)}), "a new version, scaled to 3")
	t.Run("a new commit's rollout is Progressing again, then Healthy", func(t *testing.T) {
		a.waitHealth(t, s, second, v1alpha1.HealthHealthy)
		progressing, ok := log.find(func(st v1alpha1.SyncStatus) bool {
			return strings.HasSuffix(st.LastAppliedRevision, second) && st.Health == v1alpha1.HealthProgressing
		})
		if !ok {
			t.Fatalf("no status at %.12s said Progressing before Healthy", second)
		}
		checkProgressing(t, progressing)
	})

	t.Run("one Event per transition", func(t *testing.T) {
		// The cluster may move on after the second rollout (the node lifecycle
		// controller marks pods not ready when the fake node's heartbeat lags on a
		// loaded machine): every further Event must still be a transition.
		want := []string{"Normal/Progressing", "Normal/Healthy", "Normal/Progressing", "Normal/Healthy"}
		harness.Eventually(t, waitTimeout, "the health Events", func(_ context.Context) (bool, error) {
			events := healthEvents(a.events(t, s))
			got := typesAndReasons(events)
			if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
				return false, fmt.Errorf("health events %v, want them to begin with %v: %+v", got, want, events)
			}
			for i := 1; i < len(got); i++ {
				if got[i] == got[i-1] {
					t.Fatalf("health event %d repeats %s: one Event per transition: %+v", i, got[i], events)
				}
			}
			return true, nil
		})
		for _, e := range a.events(t, s) {
			if e.Reason == v1alpha1.ReasonDriftCorrected {
				t.Errorf("a rollout was taken for drift: %s", e.Message)
			}
		}
	})
}

// checkProgressing checks what a Sync says while its Deployment rolls out.
func checkProgressing(t *testing.T, st v1alpha1.SyncStatus) {
	t.Helper()
	r, ok := resource(st, "Deployment", "web")
	if !ok || r.Health != v1alpha1.HealthProgressing || r.Message == "" {
		t.Errorf("status.resources has Deployment/web as %+v (found %t), want Progressing with a message", r, ok)
	}
	if c := condition(st, v1alpha1.HealthyCondition); c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonProgressing {
		t.Errorf("Healthy condition = %+v, want False, Progressing", c)
	}
	if c := condition(st, v1alpha1.ReconcilingCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Reconciling condition = %+v while Progressing, want True", c)
	}
}

func typesAndReasons(events []event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Type + "/" + e.Reason
	}
	return out
}

func TestPodsThatNeverBecomeReadyAreDegradedAfterTheProgressDeadline(t *testing.T) {
	a := startAgent(t, agentOptions{})
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo, commit := startRepo(t, map[string]string{"web.yaml": deployment("1", 1,
		map[string]string{controlplane.NeverReadyAnnotation: "true"}, "progressDeadlineSeconds: 3")})
	s := a.newSync(t, ns, repo)

	got := a.waitHealth(t, s, commit, v1alpha1.HealthDegraded)
	capture(t, a.Client, deploymentKind, ns, "web", "deployment/degraded-progress-deadline", true)
	capture(t, a.Client, podKind, ns, firstPod(t, a.Client, ns, "web"), "pod/progressing-never-ready", false)
	r, _ := resource(got.Status, "Deployment", "web")
	for _, why := range []string{"ProgressDeadlineExceeded", "container app not ready"} {
		if !strings.Contains(r.Message, why) {
			t.Errorf("Deployment/web says %q, want it to name %q", r.Message, why)
		}
	}
	if c := condition(got.Status, v1alpha1.HealthyCondition); c == nil || c.Reason != v1alpha1.ReasonDegraded || !strings.Contains(c.Message, "ProgressDeadlineExceeded") {
		t.Errorf("Healthy condition = %+v, want False, Degraded, naming the deadline", c)
	}
	harness.Eventually(t, waitTimeout, "a Warning Event that the Sync is Degraded", func(_ context.Context) (bool, error) {
		for _, e := range a.events(t, s) {
			if e.Type == corev1.EventTypeWarning && e.Reason == v1alpha1.ReasonDegraded && strings.Contains(e.Message, "ProgressDeadlineExceeded") {
				return true, nil
			}
		}
		return false, fmt.Errorf("events: %v", a.events(t, s))
	})
}

func TestContainersThatCannotStartAreDegradedNamingTheContainer(t *testing.T) {
	a := startAgent(t, agentOptions{})
	for _, reason := range []string{"CrashLoopBackOff", "ImagePullBackOff"} {
		t.Run(reason, func(t *testing.T) {
			ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
			repo, commit := startRepo(t, map[string]string{"web.yaml": deployment("1", 1,
				map[string]string{controlplane.ContainerWaitingAnnotation: reason})})
			s := a.newSync(t, ns, repo)
			got := a.waitHealth(t, s, commit, v1alpha1.HealthDegraded)
			capture(t, a.Client, deploymentKind, ns, "web", "deployment/degraded-"+strings.ToLower(reason), true)
			capture(t, a.Client, deploymentKind, ns, "web", "deployment/progressing-"+strings.ToLower(reason)+"-without-pods", false)
			capture(t, a.Client, podKind, ns, firstPod(t, a.Client, ns, "web"), "pod/degraded-"+strings.ToLower(reason), false)
			r, _ := resource(got.Status, "Deployment", "web")
			if want := "container app: " + reason; !strings.Contains(r.Message, want) {
				t.Errorf("Deployment/web says %q, want it to name %q", r.Message, want)
			}
		})
	}
}

func TestAFailedJobIsDegraded(t *testing.T) {
	a := startAgent(t, agentOptions{})
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo, commit := startRepo(t, map[string]string{"job.yaml": fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations: {%[1]q: "true"}
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "registry.k8s.io/pause:3.10"}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: seed}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: seed, image: "registry.k8s.io/pause:3.10"}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: serve}
spec:
  template:
    metadata:
      annotations: {%[2]q: "true"}
    spec:
      restartPolicy: Never
      containers: [{name: serve, image: "registry.k8s.io/pause:3.10"}]
`, controlplane.FailAnnotation, controlplane.NeverReadyAnnotation)})
	s := a.newSync(t, ns, repo)
	got := a.WaitFor(t, s, "Job/migrate Degraded and Job/seed done", func(s *v1alpha1.Sync) bool {
		migrate, _ := resource(s.Status, "Job", "migrate")
		return strings.HasSuffix(s.Status.LastAppliedRevision, commit) && migrate.Health == v1alpha1.HealthDegraded &&
			healthOf(s.Status, "Job", "seed") == v1alpha1.HealthHealthy
	})
	if r, _ := resource(got.Status, "Job", "serve"); r.Health != v1alpha1.HealthProgressing {
		t.Errorf("Job/serve, still running, is %+v, want Progressing", r)
	}
	capture(t, a.Client, jobKind, ns, "migrate", "job/degraded-backoff-limit", true)
	capture(t, a.Client, jobKind, ns, "seed", "job/healthy-complete", true)
	capture(t, a.Client, jobKind, ns, "serve", "job/progressing-running", true)
	r, _ := resource(got.Status, "Job", "migrate")
	for _, why := range []string{"BackoffLimitExceeded", "container migrate: exited with code 1"} {
		if !strings.Contains(r.Message, why) {
			t.Errorf("Job/migrate says %q, want it to name %q", r.Message, why)
		}
	}
}

func TestSuspendedWorkloadsAreSuspended(t *testing.T) {
	a := startAgent(t, agentOptions{})
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo, commit := startRepo(t, map[string]string{
		"web.yaml": deployment("1", 1, nil, "paused: true"),
		"jobs.yaml": `apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: report, image: "registry.k8s.io/pause:3.10"}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: hourly}
spec:
  schedule: "0 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: report, image: "registry.k8s.io/pause:3.10"}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: later}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: later, image: "registry.k8s.io/pause:3.10"}]
`,
	})
	s := a.newSync(t, ns, repo)
	got := a.waitHealth(t, s, commit, v1alpha1.HealthSuspended)
	for _, obj := range [][2]string{{"Deployment", "web"}, {"CronJob", "nightly"}, {"Job", "later"}} {
		if r, ok := resource(got.Status, obj[0], obj[1]); !ok || r.Health != v1alpha1.HealthSuspended {
			t.Errorf("%s/%s is %+v (found %t), want Suspended", obj[0], obj[1], r, ok)
		}
	}
	if h := healthOf(got.Status, "CronJob", "hourly"); h != v1alpha1.HealthHealthy {
		t.Errorf("CronJob/hourly is %s, want Healthy", h)
	}
	capture(t, a.Client, deploymentKind, ns, "web", "deployment/suspended-paused", false)
	capture(t, a.Client, cronJobKind, ns, "nightly", "cronjob/suspended", false)
	capture(t, a.Client, cronJobKind, ns, "hourly", "cronjob/healthy-scheduled", false)
	capture(t, a.Client, jobKind, ns, "later", "job/suspended", false)
}

func TestAClaimThatNeverBindsIsProgressing(t *testing.T) {
	a := startAgent(t, agentOptions{})
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo, commit := startRepo(t, map[string]string{"data.yaml": `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  storageClassName: no-such-class
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: bound}
spec:
  storageClassName: tether-rollout-manual
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: lost}
spec:
  storageClassName: tether-rollout-lost
  volumeName: tether-rollout-lost-pv
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: tether-rollout-pv}
spec:
  storageClassName: tether-rollout-manual
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/tether-rollout-pv}
`})
	// The volume of the claim lost is not in git, so that it can be lost for good.
	pv := createObject(t, a.Client, "", fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: tether-rollout-lost-pv}
spec:
  storageClassName: tether-rollout-lost
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/tether-rollout-lost-pv}
  claimRef: {namespace: %s, name: lost}
`, ns))
	s := a.newSync(t, ns, repo, func(s *v1alpha1.Sync) { s.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete })
	t.Cleanup(func() { _ = a.Client.Delete(context.WithoutCancel(t.Context()), s) })
	got := a.WaitFor(t, s, "Progressing, with only the claim without a volume unhealthy", func(s *v1alpha1.Sync) bool {
		return strings.HasSuffix(s.Status.LastAppliedRevision, commit) && s.Status.Health == v1alpha1.HealthProgressing &&
			healthOf(s.Status, "PersistentVolumeClaim", "bound") == v1alpha1.HealthHealthy &&
			healthOf(s.Status, "PersistentVolumeClaim", "lost") == v1alpha1.HealthHealthy
	})
	capture(t, a.Client, pvcKind, ns, "bound", "persistentvolumeclaim/healthy-bound", false)
	capture(t, a.Client, pvcKind, ns, "data", "persistentvolumeclaim/progressing-unbound", false)
	r, _ := resource(got.Status, "PersistentVolumeClaim", "data")
	if !strings.Contains(r.Message, "waiting for a volume to bind") {
		t.Errorf("PersistentVolumeClaim/data says %q, want it to wait for a volume", r.Message)
	}

	t.Run("a claim whose volume is gone is Degraded", func(t *testing.T) {
		// The volume goes as if deleted outside Kubernetes' care: without the
		// protection finalizer that keeps it while it is bound. Deleted first: the
		// protection controller puts the finalizer back on a volume that is not
		// being deleted.
		harness.Must(t, a.Client.Delete(t.Context(), pv))
		harness.Must(t, a.Client.Patch(t.Context(), pv, client.RawPatch(types.MergePatchType, []byte(`{"metadata": {"finalizers": null}}`))))
		got := a.WaitFor(t, s, "the claim lost Degraded", func(s *v1alpha1.Sync) bool {
			lost, _ := resource(s.Status, "PersistentVolumeClaim", "lost")
			return lost.Health == v1alpha1.HealthDegraded
		})
		if r, _ := resource(got.Status, "PersistentVolumeClaim", "lost"); !strings.Contains(r.Message, "lost") {
			t.Errorf("PersistentVolumeClaim/lost says %q, want it to say its volume is lost", r.Message)
		}
		capture(t, a.Client, pvcKind, ns, "lost", "persistentvolumeclaim/degraded-lost", false)
	})
}

func TestCustomResourcesAreJudgedByTheirConditions(t *testing.T) {
	a := startAgent(t, agentOptions{})
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	controlplane.InstallCRDs(t, controlplane.Shared(t).Config(), "testdata/crds")
	// The Gadget CRD has no status subresource, so the status written in git is
	// the status in the cluster: what the gadgets' controller would have said.
	repo, commit := startRepo(t, map[string]string{"gadgets.yaml": `apiVersion: example.tether.dev/v1
kind: Gadget
metadata: {name: broken}
status:
  conditions:
  - {type: Ready, status: "False", reason: BadConfig, message: "the flux capacitor is missing", lastTransitionTime: "2026-01-01T00:00:00Z"}
---
apiVersion: example.tether.dev/v1
kind: Gadget
metadata: {name: plain}
`})
	s := a.newSync(t, ns, repo)
	got := a.waitHealth(t, s, commit, v1alpha1.HealthDegraded)
	if r, _ := resource(got.Status, "Gadget", "broken"); r.Health != v1alpha1.HealthDegraded || !strings.Contains(r.Message, "BadConfig: the flux capacitor is missing") {
		t.Errorf("Gadget/broken is %+v, want Degraded naming its Ready condition", r)
	}
	if h := healthOf(got.Status, "Gadget", "plain"); h != v1alpha1.HealthHealthy {
		t.Errorf("Gadget/plain (no conditions) is %s, want Healthy", h)
	}
	if got.Status.Summary == nil || got.Status.Summary.Degraded != 1 || got.Status.Summary.Total != 2 {
		t.Errorf("summary = %+v, want 1 of 2 Degraded", got.Status.Summary)
	}
}

func TestHealthChecksJudgeCustomResourcesWithCEL(t *testing.T) {
	a := startAgent(t, agentOptions{})
	controlplane.InstallCRDs(t, controlplane.Shared(t).Config(), "testdata/crds")
	repo, commit := startRepo(t, map[string]string{"gadgets.yaml": `apiVersion: example.tether.dev/v1
kind: Gadget
metadata: {name: warming}
status: {phase: Warming}
---
apiVersion: example.tether.dev/v1
kind: Gadget
metadata: {name: "on"}
status: {phase: "On"}
`})
	check := v1alpha1.HealthCheck{
		APIVersion: "example.tether.dev/v1", Kind: "Gadget",
		InProgress: "status.phase == 'Warming'",
		Failed:     "status.phase == 'Broken'",
		Current:    "status.phase == 'On'",
	}

	t.Run("the expressions decide", func(t *testing.T) {
		ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
		s := a.newSync(t, ns, repo, func(s *v1alpha1.Sync) { s.Spec.HealthChecks = []v1alpha1.HealthCheck{check} })
		got := a.waitHealth(t, s, commit, v1alpha1.HealthProgressing)
		if r, _ := resource(got.Status, "Gadget", "warming"); r.Health != v1alpha1.HealthProgressing || !strings.Contains(r.Message, "inProgress") {
			t.Errorf("Gadget/warming is %+v, want Progressing by its inProgress expression", r)
		}
		if h := healthOf(got.Status, "Gadget", "on"); h != v1alpha1.HealthHealthy {
			t.Errorf("Gadget/on is %s, want Healthy", h)
		}
	})

	t.Run("an expression that does not compile stalls the Sync, naming it", func(t *testing.T) {
		ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
		bad := check
		bad.Failed = "status.phase = 'Broken'"
		s := a.newSync(t, ns, repo, func(s *v1alpha1.Sync) { s.Spec.HealthChecks = []v1alpha1.HealthCheck{bad} })
		got := a.WaitFor(t, s, "Stalled", func(s *v1alpha1.Sync) bool {
			c := condition(s.Status, v1alpha1.StalledCondition)
			return c != nil && c.Status == metav1.ConditionTrue
		})
		c := condition(got.Status, v1alpha1.StalledCondition)
		if c.Reason != v1alpha1.ReasonHealthCheckInvalid || !strings.Contains(c.Message, "spec.healthChecks[0].failed (Gadget)") {
			t.Errorf("Stalled = %s: %s, want %s naming spec.healthChecks[0].failed", c.Reason, c.Message, v1alpha1.ReasonHealthCheckInvalid)
		}
		if got.Status.LastAppliedRevision != "" {
			t.Errorf("lastAppliedRevision = %q: a Sync with an invalid health check applied", got.Status.LastAppliedRevision)
		}
	})

	t.Run("the API server refuses two checks of one kind", func(t *testing.T) {
		ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
		s := &v1alpha1.Sync{
			ObjectMeta: metav1.ObjectMeta{Name: "twice", Namespace: ns},
			Spec: v1alpha1.SyncSpec{
				Source:       v1alpha1.SourceSpec{URL: repo.FileURL()},
				HealthChecks: []v1alpha1.HealthCheck{check, check},
			},
		}
		err := a.Client.Create(t.Context(), s)
		if err == nil || !strings.Contains(err.Error(), "each apiVersion and kind may have one health check") {
			t.Errorf("creating a Sync with two checks of one kind: %v, want it refused", err)
		}
	})
}

func TestStatefulSetsAndDaemonSetsRollOut(t *testing.T) {
	a := startAgent(t, agentOptions{})
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	workload := func(kind, name, version string, podAnnotations map[string]string, spec ...string) string {
		ann := []string{fmt.Sprintf("version: %q", version)}
		for k, v := range podAnnotations {
			ann = append(ann, fmt.Sprintf("%q: %q", k, v))
		}
		return fmt.Sprintf(`apiVersion: apps/v1
kind: %s
metadata: {name: %s}
spec:
  selector: {matchLabels: {app: %[2]s}}
%[5]s  template:
    metadata:
      labels: {app: %[2]s}
      annotations: {%[4]s}
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{name: app, image: "registry.k8s.io/pause:3.10"}]
`, kind, name, version, strings.Join(ann, ", "), indent(spec))
	}
	files := func(version string) map[string]string {
		return map[string]string{
			"db.yaml":     workload("StatefulSet", "db", version, nil, "replicas: 2", "serviceName: db", "updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 1}}"),
			"agent.yaml":  workload("DaemonSet", "agent", version, nil),
			"broken.yaml": workload("DaemonSet", "broken", version, map[string]string{controlplane.NeverReadyAnnotation: "true"}),
			"crash.yaml":  workload("StatefulSet", "crash", version, map[string]string{controlplane.ContainerWaitingAnnotation: "CrashLoopBackOff"}, "replicas: 1", "serviceName: crash"),
			"crashd.yaml": workload("DaemonSet", "crashd", version, map[string]string{controlplane.ContainerWaitingAnnotation: "CrashLoopBackOff"}),
		}
	}
	repo, first := startRepo(t, files("1"))
	s := a.newSync(t, ns, repo, func(s *v1alpha1.Sync) { s.Spec.Source.Interval = &metav1.Duration{Duration: 2 * time.Second} })

	t.Run("ready sets are Healthy, a set whose pods crash is Degraded, one whose pods never get ready Progressing", func(t *testing.T) {
		got := a.WaitFor(t, s, "the sets settled", func(s *v1alpha1.Sync) bool {
			crash, _ := resource(s.Status, "StatefulSet", "crash")
			crashd, _ := resource(s.Status, "DaemonSet", "crashd")
			broken, _ := resource(s.Status, "DaemonSet", "broken")
			return strings.HasSuffix(s.Status.LastAppliedRevision, first) && crash.Health == v1alpha1.HealthDegraded && crashd.Health == v1alpha1.HealthDegraded &&
				broken.Health == v1alpha1.HealthProgressing && healthOf(s.Status, "StatefulSet", "db") == v1alpha1.HealthHealthy &&
				healthOf(s.Status, "DaemonSet", "agent") == v1alpha1.HealthHealthy
		})
		for _, set := range [][2]string{{"StatefulSet", "crash"}, {"DaemonSet", "crashd"}} {
			if r, _ := resource(got.Status, set[0], set[1]); !strings.Contains(r.Message, "container app: CrashLoopBackOff") {
				t.Errorf("%s/%s says %q, want it to name the container", set[0], set[1], r.Message)
			}
		}
		capture(t, a.Client, statefulSetKind, ns, "crash", "statefulset/degraded-crashloopbackoff", true)
		capture(t, a.Client, statefulSetKind, ns, "db", "statefulset/healthy-ready", true)
		capture(t, a.Client, daemonSetKind, ns, "agent", "daemonset/healthy-ready", true)
		capture(t, a.Client, daemonSetKind, ns, "broken", "daemonset/progressing-never-ready", true)
		capture(t, a.Client, daemonSetKind, ns, "crashd", "daemonset/degraded-crashloopbackoff", true)
	})

	second := repo.Commit(t, prefixed(files("2")), "version 2")
	t.Run("a partitioned StatefulSet is Healthy once the replicas above its partition are updated", func(t *testing.T) {
		got := a.WaitFor(t, s, "StatefulSet/db Healthy at the second commit", func(s *v1alpha1.Sync) bool {
			return strings.HasSuffix(s.Status.LastAppliedRevision, second) && healthOf(s.Status, "StatefulSet", "db") == v1alpha1.HealthHealthy
		})
		if r, _ := resource(got.Status, "StatefulSet", "db"); !strings.Contains(r.Message, "partitioned rollout done: 1 of 2 replicas updated (partition 1)") {
			t.Errorf("StatefulSet/db says %q, want it to tell the partitioned rollout is done", r.Message)
		}
		capture(t, a.Client, statefulSetKind, ns, "db", "statefulset/healthy-partitioned", true)
	})
}
