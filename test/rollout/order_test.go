package rollout

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// hookJob is a Job written as Argo CD users write hooks: generateName and the
// argocd.argoproj.io annotations given as "key: value" lines. fault, a kwok fault
// annotation or "", is set on its pod: FailAnnotation makes it fail,
// NeverReadyAnnotation keeps it running; without one kwok completes it.
func hookJob(generateName, fault string, annotations ...string) string {
	pod := ""
	if fault != "" {
		pod = fmt.Sprintf("%q: \"true\"", fault)
	}
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  generateName: %s
  annotations: {%s}
spec:
  backoffLimit: 0
  template:
    metadata: {annotations: {%s}}
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 0
      containers: [{name: run, image: "registry.k8s.io/pause:3.10"}]
`, generateName, strings.Join(annotations, ", "), pod)
}

// wavedDeployment is a Deployment named name of one replica in wave.
func wavedDeployment(name string, wave int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  annotations: {argocd.argoproj.io/sync-wave: "%[2]d"}
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{name: app, image: "registry.k8s.io/pause:3.10"}]
`, name, wave)
}

// hookJobs lists the hook Jobs in ns, by the run that created them
// ("<revision>/<phase>").
func (a *agent) hookJobs(t *testing.T, ns string) map[string][]batchv1.Job {
	t.Helper()
	list := &batchv1.JobList{}
	harness.Must(t, a.Client.List(t.Context(), list, client.InNamespace(ns), client.HasLabels{plan.HookLabel}))
	out := map[string][]batchv1.Job{}
	for _, j := range list.Items {
		if j.DeletionTimestamp == nil {
			run := j.Annotations[plan.HookRunAnnotation]
			out[run] = append(out[run], j)
		}
	}
	return out
}

// finishPods takes the kwok fault annotation off the pods of Jobs in ns that
// carry it (waiting for one to exist), so that kwok completes them.
func (a *agent) finishPods(t *testing.T, ns, fault string) {
	t.Helper()
	harness.Eventually(t, waitTimeout, "a Job's pod with "+fault+" to finish", func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := a.Client.List(ctx, pods, client.InNamespace(ns), client.HasLabels{"batch.kubernetes.io/job-name"}); err != nil {
			return false, err
		}
		finished := 0
		for i := range pods.Items {
			p := &pods.Items[i]
			if _, ok := p.Annotations[fault]; !ok || p.DeletionTimestamp != nil {
				continue
			}
			patch := client.MergeFrom(p.DeepCopy())
			delete(p.Annotations, fault)
			if err := a.Client.Patch(ctx, p, patch); err != nil {
				return false, err
			}
			finished++
		}
		return finished > 0, nil
	})
}

// appliedAt is when the field manager tether last changed obj, by the API server's
// clock.
func appliedAt(t *testing.T, obj client.Object) time.Time {
	t.Helper()
	for _, m := range obj.GetManagedFields() {
		if m.Manager == "tether" && m.Operation == metav1.ManagedFieldsOperationApply && m.Time != nil {
			return m.Time.Time
		}
	}
	t.Fatalf("%s has no managedFields entry of tether", obj.GetName())
	return time.Time{}
}

func revisionOf(commit string) string { return "main@sha1:" + commit }

func pollEvery2s(s *v1alpha1.Sync) {
	s.Spec.Source.Interval = &metav1.Duration{Duration: 2 * time.Second}
}

// TestAMigrationJobCompletesBeforeTheDeploymentChanges syncs an Argo CD repository
// unchanged: a PreSync Job with generateName and no delete policy, and a
// Deployment. At each revision the Job runs first and the Deployment changes only
// after the Job completed, by the API server's own timestamps; the Job of the
// earlier revision is deleted before the new one is created (BeforeHookCreation);
// a revision that changes no object runs no hook.
func TestAMigrationJobCompletesBeforeTheDeploymentChanges(t *testing.T) {
	a := startAgent(t, agentOptions{})
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	migrate := hookJob("migrate-", "", "argocd.argoproj.io/hook: PreSync")
	repo, first := startRepo(t, map[string]string{"web.yaml": deployment("1", 1, nil), "migrate.yaml": migrate})
	s := a.newSync(t, ns, repo, pollEvery2s)
	a.waitHealth(t, s, first, v1alpha1.HealthHealthy)
	if jobs := a.hookJobs(t, ns); len(jobs[revisionOf(first)+"/PreSync"]) != 1 {
		t.Fatalf("hook Jobs after the first revision: %v, want one of its PreSync run", keys(jobs))
	}

	// The second revision's migration runs until the test lets it finish: the
	// Deployment must not change meanwhile.
	second := repo.Commit(t, prefixed(map[string]string{
		"web.yaml":     deployment("2", 1, nil),
		"migrate.yaml": hookJob("migrate-", controlplane.NeverReadyAnnotation, "argocd.argoproj.io/hook: PreSync"),
	}), "second")
	a.WaitFor(t, s, "the second run waiting for its migration Job", func(s *v1alpha1.Sync) bool {
		r := s.Status.Run
		return r != nil && r.Revision == revisionOf(second) && r.Phase == "PreSync" && strings.Contains(r.Message, "waiting for Job/"+ns+"/migrate-")
	})
	web := &appsv1.Deployment{}
	harness.Must(t, a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web"}, web))
	if v := web.Spec.Template.Annotations["version"]; v != "1" {
		t.Fatalf("Deployment web is at version %q while the migration runs, want still 1", v)
	}
	a.finishPods(t, ns, controlplane.NeverReadyAnnotation)
	a.waitHealth(t, s, second, v1alpha1.HealthHealthy)
	jobs := a.hookJobs(t, ns)
	run := jobs[revisionOf(second)+"/PreSync"]
	if len(run) != 1 || len(jobs) != 1 {
		t.Fatalf("hook Jobs after the second revision: %v, want only the one of its PreSync run (the first run's deleted before it)", keys(jobs))
	}
	job := run[0]
	if !strings.HasPrefix(job.Name, "migrate-") || job.Status.CompletionTime == nil {
		t.Fatalf("Job %s: completionTime %v; want a completed migrate- Job", job.Name, job.Status.CompletionTime)
	}
	harness.Must(t, a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web"}, web))
	changed := appliedAt(t, web)
	t.Logf("API server timestamps: Job %s created %s, completed %s; Deployment web changed by tether %s",
		job.Name, job.CreationTimestamp.UTC().Format(time.RFC3339), job.Status.CompletionTime.UTC().Format(time.RFC3339), changed.UTC().Format(time.RFC3339))
	if changed.Before(job.Status.CompletionTime.Time) {
		t.Errorf("Deployment web changed at %s, before the migration Job completed at %s", changed, job.Status.CompletionTime)
	}
	if web.Spec.Template.Annotations["version"] != "2" {
		t.Errorf("Deployment web's version = %q, want 2", web.Spec.Template.Annotations["version"])
	}

	// A commit outside the Sync's path: a new revision with no object changed.
	third := repo.Commit(t, map[string]string{"README.md": "notes\n"}, "third")
	a.WaitFor(t, s, "the third revision applied", func(s *v1alpha1.Sync) bool {
		return s.Status.LastAppliedRevision == revisionOf(third)
	})
	if jobs := a.hookJobs(t, ns); len(jobs) != 1 || len(jobs[revisionOf(second)+"/PreSync"]) != 1 {
		t.Errorf("hook Jobs after a revision that changed nothing: %v, want still only the second's", keys(jobs))
	}
	started := 0
	for _, e := range a.events(t, s) {
		if e.Reason == v1alpha1.ReasonPhaseStarted && strings.HasPrefix(e.Message, "PreSync") {
			started++
		}
	}
	if started != 2 {
		t.Errorf("%d PreSync PhaseStarted Events, want 2 (the first and second revisions, not the third)", started)
	}
}

// TestAFailingPreSyncHookStopsTheRevision: the PreSync Job fails, so nothing else
// of the revision is written; the Sync is Stalled naming the Job and why, the
// SyncFail hook ran, and the failure is counted.
func TestAFailingPreSyncHookStopsTheRevision(t *testing.T) {
	a := startAgent(t, agentOptions{})
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	settings := func(v string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {level: %q}\n", v)
	}
	repo, first := startRepo(t, map[string]string{"settings.yaml": settings("1")})
	s := a.newSync(t, ns, repo, pollEvery2s)
	a.waitHealth(t, s, first, v1alpha1.HealthHealthy)

	second := repo.Commit(t, prefixed(map[string]string{
		"settings.yaml": settings("2"),
		"added.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: added}\n",
		"migrate.yaml":  hookJob("migrate-", controlplane.FailAnnotation, "argocd.argoproj.io/hook: PreSync"),
		"notify.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: failed-note\n  annotations: {argocd.argoproj.io/hook: SyncFail}\n",
	}), "second")
	got := a.WaitFor(t, s, "Stalled by the failed PreSync hook", func(s *v1alpha1.Sync) bool {
		c := condition(s.Status, v1alpha1.StalledCondition)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonHookFailed
	})
	ready := condition(got.Status, v1alpha1.ReadyCondition)
	for _, want := range []string{"PreSync", "Job/" + ns + "/migrate-", "BackoffLimitExceeded"} {
		if !strings.Contains(ready.Message, want) {
			t.Errorf("Ready's message %q does not say %q", ready.Message, want)
		}
	}
	if got.Status.Run == nil || got.Status.Run.State != v1alpha1.RunFailed || got.Status.Run.Phase != "PreSync" || got.Status.Run.Revision != revisionOf(second) {
		t.Errorf("status.run = %+v, want Failed at PreSync of the second revision", got.Status.Run)
	}
	if got.Status.LastAppliedRevision != revisionOf(first) {
		t.Errorf("lastAppliedRevision = %s, want still the first", got.Status.LastAppliedRevision)
	}
	cm := &corev1.ConfigMap{}
	harness.Must(t, a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "settings"}, cm))
	if cm.Data["level"] != "1" {
		t.Errorf("ConfigMap settings says level %q: the revision was written past its failed PreSync hook", cm.Data["level"])
	}
	if err := a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "added"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap added: %v, want NotFound: the revision was written past its failed PreSync hook", err)
	}
	harness.Must(t, a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "failed-note"}, &corev1.ConfigMap{}))
	if n := a.counter(t, "tether_hook_failures_total", ns, "PreSync"); n != 1 {
		t.Errorf("tether_hook_failures_total{phase=PreSync} = %v, want 1", n)
	}

	// The revision is not tried again at every interval (2 s here), but a
	// requested reconcile runs it afresh: a new Job, which fails again.
	failedRun := a.hookJobs(t, ns)[revisionOf(second)+"/PreSync"]
	if len(failedRun) != 1 {
		t.Fatalf("Jobs of the failed run: %v, want one", names(failedRun))
	}
	requested := time.Now().Format(time.RFC3339Nano)
	patch := client.MergeFrom(got.DeepCopy())
	got.Annotations = map[string]string{v1alpha1.ReconcileRequestedAnnotation: requested}
	harness.Must(t, a.Client.Patch(t.Context(), got, patch))
	harness.Eventually(t, waitTimeout, "the requested reconcile runs the PreSync hook again", func(ctx context.Context) (bool, error) {
		run := a.hookJobs(t, ns)[revisionOf(second)+"/PreSync"]
		if len(run) == 1 && run[0].UID != failedRun[0].UID && run[0].Status.Failed > 0 {
			return true, nil
		}
		now := &v1alpha1.Sync{}
		if err := a.Client.Get(ctx, client.ObjectKeyFromObject(s), now); err != nil {
			return false, err
		}
		var jobs []string
		for _, j := range run {
			jobs = append(jobs, fmt.Sprintf("%s uid %s failed %d", j.Name, j.UID, j.Status.Failed))
		}
		return false, fmt.Errorf("jobs %v (failed run's uid %s); run %+v; handled %q; %s", jobs, failedRun[0].UID, now.Status.Run, now.Status.LastHandledReconcileAt, harness.Describe(now))
	})

	// The next commit fixes the migration and goes through.
	third := repo.Commit(t, prefixed(map[string]string{"migrate.yaml": hookJob("migrate-", "", "argocd.argoproj.io/hook: PreSync")}), "third")
	a.WaitFor(t, s, "the third revision applied", func(s *v1alpha1.Sync) bool {
		return s.Status.LastAppliedRevision == revisionOf(third) && isReady(s)
	})
	harness.Must(t, a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "settings"}, cm))
	if cm.Data["level"] != "2" {
		t.Errorf("ConfigMap settings says level %q after the fixed revision, want 2", cm.Data["level"])
	}
	if jobs := a.hookJobs(t, ns); len(jobs) != 1 || len(jobs[revisionOf(third)+"/PreSync"]) != 1 {
		t.Errorf("hook Jobs after the fixed revision: %v, want its own alone (BeforeHookCreation)", keys(jobs))
	}
}

func isReady(s *v1alpha1.Sync) bool {
	c := condition(s.Status, v1alpha1.ReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue
}

// TestWavesRollOutInOrder: Deployments in waves -1, 0 and 1 are created one wave
// after the other, each once the one before is Available, by the API server's
// timestamps; PostSync hooks run after, and their delete policies hold.
func TestWavesRollOutInOrder(t *testing.T) {
	a := startAgent(t, agentOptions{})
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo, first := startRepo(t, map[string]string{
		"first.yaml":  wavedDeployment("first", -1),
		"second.yaml": wavedDeployment("second", 0),
		"third.yaml":  wavedDeployment("third", 1),
		// HookSucceeded: deleted once the run succeeded; HookFailed alone: kept.
		"smoke.yaml":  hookJob("smoke-", "", "argocd.argoproj.io/hook: PostSync", "argocd.argoproj.io/hook-delete-policy: HookSucceeded"),
		"report.yaml": hookJob("report-", "", "argocd.argoproj.io/hook: PostSync", "argocd.argoproj.io/hook-delete-policy: HookFailed"),
	})
	s := a.newSync(t, ns, repo, pollEvery2s)
	log := a.recordStatuses(t, s)
	got := a.waitHealth(t, s, first, v1alpha1.HealthHealthy)

	var prevReady time.Time
	for _, name := range []string{"first", "second", "third"} {
		d := &appsv1.Deployment{}
		harness.Must(t, a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, d))
		t.Logf("API server timestamps: Deployment %s created %s, Available %s", name, d.CreationTimestamp.UTC().Format(time.RFC3339), availableAt(d).UTC().Format(time.RFC3339))
		if d.CreationTimestamp.Time.Before(prevReady) {
			t.Errorf("Deployment %s created at %s, before the wave before it was Available at %s", name, d.CreationTimestamp, prevReady)
		}
		prevReady = availableAt(d)
	}
	for _, wave := range []int32{-1, 0, 1} {
		if _, ok := log.find(func(st v1alpha1.SyncStatus) bool {
			return st.Run != nil && st.Run.Phase == "Sync" && st.Run.Wave == wave && st.Run.State == v1alpha1.RunRunning
		}); !ok {
			t.Errorf("no status showed the Sync phase at wave %d in progress", wave)
		}
	}
	if got.Status.Run == nil || got.Status.Run.State != v1alpha1.RunSucceeded {
		t.Errorf("status.run = %+v, want Succeeded", got.Status.Run)
	}
	jobs := a.hookJobs(t, ns)
	post := jobs[revisionOf(first)+"/PostSync"]
	if len(post) != 1 || !strings.HasPrefix(post[0].Name, "report-") {
		t.Errorf("PostSync Jobs left: %v, want report- alone (smoke- is HookSucceeded)", names(post))
	}
	if slices.ContainsFunc(plan.Inventory(got.Status), func(r v1alpha1.ObjectRef) bool { return r.Kind == "Job" }) {
		t.Errorf("a hook Job is in the inventory: %v", plan.Inventory(got.Status))
	}
	if n := a.counter(t, "tether_hook_runs_total", ns, "PostSync"); n != 2 {
		t.Errorf("tether_hook_runs_total{phase=PostSync} = %v, want 2", n)
	}
}

func availableAt(d *appsv1.Deployment) time.Time {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// counter reads a counter of the agent's for the Syncs of ns at phase.
func (a *agent) counter(t *testing.T, name, ns, phase string) float64 {
	t.Helper()
	families, err := a.Registry.Gather()
	harness.Must(t, err)
	var n float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == ns && labels["phase"] == phase {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func names(jobs []batchv1.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Name)
	}
	return out
}

// TestDependsOnChainAcrossNamespaces: custom resources in one namespace wait for
// the operator in another, which waits for its CRDs; a Sync created before its
// dependency says so, and each proceeds when the one before it is Ready, queued by
// its change. Two Syncs that depend on each other are refused, naming the cycle.
func TestDependsOnChainAcrossNamespaces(t *testing.T) {
	a := startAgent(t, agentOptions{})
	cfg := controlplane.Shared(t).Config()
	platform, apps := controlplane.NewNamespace(t, cfg), controlplane.NewNamespace(t, cfg)
	group := platform + ".example.com"
	crd := fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.%[1]s}
spec:
  group: %[1]s
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, group)
	t.Cleanup(func() {
		obj := &apiextensionsv1.CustomResourceDefinition{}
		obj.SetName("widgets." + group)
		_ = a.Client.Delete(context.WithoutCancel(t.Context()), obj)
	})
	repo := gitserver.NewLocalRepo(t, "deps")
	repo.Commit(t, map[string]string{
		"crds/crd.yaml":          crd,
		"operator/operator.yaml": wavedDeployment("operator", 0),
		"widgets/widget.yaml":    fmt.Sprintf("apiVersion: %s/v1\nkind: Widget\nmetadata: {name: gear}\nspec: {teeth: 12}\n", group),
		"cycle/a.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
	}, "platform and apps")
	syncOf := func(ns, name, path string, deps ...v1alpha1.DependencyReference) *v1alpha1.Sync {
		return a.newSync(t, ns, repo, func(s *v1alpha1.Sync) {
			s.Name, s.Spec.Source.Path, s.Spec.DependsOn = name, path, deps
		})
	}
	widgets := syncOf(apps, "widgets", "widgets", v1alpha1.DependencyReference{Namespace: platform, Name: "operator"})
	a.WaitFor(t, widgets, "waiting for a dependency that does not exist", func(s *v1alpha1.Sync) bool {
		c := condition(s.Status, v1alpha1.ReadyCondition)
		return c != nil && c.Reason == v1alpha1.ReasonDependencyNotReady && strings.Contains(c.Message, "Sync "+platform+"/operator does not exist")
	})
	operator := syncOf(platform, "operator", "operator", v1alpha1.DependencyReference{Name: "crds"})
	a.WaitFor(t, widgets, "waiting for the operator, not Ready", func(s *v1alpha1.Sync) bool {
		c := condition(s.Status, v1alpha1.ReadyCondition)
		return c != nil && c.Reason == v1alpha1.ReasonDependencyNotReady && strings.Contains(c.Message, "Sync "+platform+"/operator is not Ready")
	})
	crds := syncOf(platform, "crds", "crds")
	// The Syncs poll git hourly: only the dependencies' changes queue them now.
	for _, s := range []*v1alpha1.Sync{crds, operator, widgets} {
		a.WaitFor(t, s, s.Name+" Ready", func(s *v1alpha1.Sync) bool {
			c := condition(s.Status, v1alpha1.ReadyCondition)
			return c != nil && c.Status == metav1.ConditionTrue
		})
	}
	first := a.readyAt(t, crds)
	for _, s := range []*v1alpha1.Sync{operator, widgets} {
		if at := a.readyAt(t, s); at.Before(first) {
			t.Errorf("Sync %s Ready at %s, before its dependency at %s", s.Name, at, first)
		}
		first = a.readyAt(t, s)
	}

	x := syncOf(apps, "x", "cycle", v1alpha1.DependencyReference{Name: "y"})
	syncOf(apps, "y", "cycle", v1alpha1.DependencyReference{Name: "x"})
	a.WaitFor(t, x, "refused for the cycle", func(s *v1alpha1.Sync) bool {
		c := condition(s.Status, v1alpha1.StalledCondition)
		return c != nil && c.Reason == v1alpha1.ReasonDependencyCycle && strings.Contains(c.Message, apps+"/x → "+apps+"/y → "+apps+"/x")
	})
}

// readyAt is when the Sync's Ready condition last turned True.
func (a *agent) readyAt(t *testing.T, s *v1alpha1.Sync) time.Time {
	t.Helper()
	got := &v1alpha1.Sync{}
	harness.Must(t, a.Client.Get(t.Context(), client.ObjectKeyFromObject(s), got))
	return condition(got.Status, v1alpha1.ReadyCondition).LastTransitionTime.Time
}
