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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/test/chartrepo"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/ociregistry"
)

// webChart is a chart of the Deployment web (its replicas and version from
// values), an HPA that a value enables, a pre-install hook and a test hook.
var webChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: web\nversion: 0.1.0\n",
	"values.yaml": "replicaCount: 2\nversion: \"1\"\nautoscaling: {enabled: false, minReplicas: 3}\n",
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.replicaCount }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
      annotations: {version: {{ .Values.version | quote }}}
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{name: app, image: "registry.k8s.io/pause:3.10"}]
`,
	"templates/hpa.yaml": `{{- if .Values.autoscaling.enabled }}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: {{ .Release.Name }}}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: {{ .Release.Name }}}
  minReplicas: {{ .Values.autoscaling.minReplicas }}
  maxReplicas: 5
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
{{- end }}
`,
	"templates/migrate.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations: {helm.sh/hook: pre-install}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: "registry.k8s.io/pause:3.10"}]
`,
	"templates/tests/connection.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations: {helm.sh/hook: test}
spec:
  restartPolicy: Never
  containers: [{name: t, image: "registry.k8s.io/pause:3.10"}]
`,
}

func TestAChartInGitRollsOutAndFollowsItsValues(t *testing.T) {
	a := startAgent(t, agentOptions{})
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo, first := startRepo(t, webChart)
	s := a.newSync(t, ns, repo, func(s *v1alpha1.Sync) {
		s.Spec.Source.Interval = &metav1.Duration{Duration: 2 * time.Second}
		s.Spec.Helm = &v1alpha1.HelmSpec{ReleaseName: "web"}
	})

	t.Run("the chart's pre-install hook runs first, then the Deployment rolls out, Synced and Healthy", func(t *testing.T) {
		got := a.waitHealth(t, s, first, v1alpha1.HealthHealthy)
		if got.Status.Sync != v1alpha1.SyncStatusSynced {
			t.Errorf("sync = %s, want Synced: %s", got.Status.Sync, harness.Describe(got))
		}
		a.checkHookRanFirst(t, ns, first)
		if slices.ContainsFunc(plan.Inventory(got.Status), func(r v1alpha1.ObjectRef) bool { return r.Kind == "Job" }) {
			t.Errorf("the hook is in the inventory: %v", plan.Inventory(got.Status))
		}
		// Helm's test hooks have no counterpart in a sync: not applied, and named.
		if c := condition(got.Status, v1alpha1.SourceReadyCondition); c == nil || !strings.Contains(c.Message, "hooks skipped (not applied): Pod/web-test") {
			t.Errorf("SourceReady = %+v, want its message to name the test hook skipped", c)
		}
		if err := a.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web-test"}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
			t.Errorf("the test hook's Pod: %v, want it not applied", err)
		}
	})

	values := map[string]string{"values.yaml": "replicaCount: 2\nversion: \"2\"\nautoscaling: {enabled: false, minReplicas: 3}\n"}
	second := repo.Commit(t, prefixed(values), "version 2")
	t.Run("a values change in git runs the hook again, then rolls the Deployment", func(t *testing.T) {
		a.waitHealth(t, s, second, v1alpha1.HealthHealthy)
		a.checkHookRanFirst(t, ns, second)
		d := &appsv1.Deployment{}
		harness.Must(t, a.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, d))
		if v := d.Spec.Template.Annotations["version"]; v != "2" {
			t.Errorf("the pod template's version = %q, want 2", v)
		}
	})

	values["values.yaml"] = "replicaCount: 2\nversion: \"2\"\nautoscaling: {enabled: true, minReplicas: 3}\n"
	third := repo.Commit(t, prefixed(values), "autoscaling on")
	t.Run("an HPA enabled by a value keeps its replicas", func(t *testing.T) {
		a.waitHealth(t, s, third, v1alpha1.HealthHealthy)
		replicas := func(_ context.Context) (bool, error) {
			d := &appsv1.Deployment{}
			if err := a.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, d); err != nil {
				return false, err
			}
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
				return false, fmt.Errorf("replicas %v, want the HPA's 3", d.Spec.Replicas)
			}
			return true, nil
		}
		harness.Eventually(t, waitTimeout, "the HPA's replicas", replicas)
		values["values.yaml"] = "replicaCount: 2\nversion: \"3\"\nautoscaling: {enabled: true, minReplicas: 3}\n"
		fourth := repo.Commit(t, prefixed(values), "version 3, still autoscaled")
		a.waitHealth(t, s, fourth, v1alpha1.HealthHealthy)
		if ok, err := replicas(t.Context()); !ok {
			t.Errorf("after a new revision: %v", err)
		}
	})
}

// The same chart packaged in a chart repository on loopback: its Deployment
// rolls out on kwok, and a new version in range is followed at the interval.
func TestAPackagedChartRollsOutAndFollowsItsRange(t *testing.T) {
	charts := chartrepo.Start(t, chartrepo.Options{})
	rollsOutAndFollows(t, charts.URL, func(t *testing.T, c *chart.Chart, version string) { charts.Publish(t, c, version) })
}

func TestAChartFromAnOCIRegistryRollsOutAndFollowsItsRange(t *testing.T) {
	reg := ociregistry.Start(t)
	rollsOutAndFollows(t, reg.Repository, func(t *testing.T, c *chart.Chart, version string) {
		reg.Push(t, "web", version, chartrepo.Package(t, c, version))
	})
}

// rollsOutAndFollows checks that a Sync of chart web (webChart) of repository,
// at a 2 s interval, rolls out 0.1.0, then 0.2.0 once publish makes it.
func rollsOutAndFollows(t *testing.T, repository string, publish func(t *testing.T, c *chart.Chart, version string)) {
	a := startAgent(t, agentOptions{})
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	publish(t, chartrepo.ChartOf(t, webChart), "0.1.0")
	s := &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: v1alpha1.SyncSpec{
			Source: v1alpha1.SourceSpec{
				Chart:    &v1alpha1.ChartSource{Repository: repository, Name: "web", Version: "0.x"},
				Interval: &metav1.Duration{Duration: 2 * time.Second},
			},
			Destination: v1alpha1.DestinationSpec{Namespace: ns},
			Helm:        &v1alpha1.HelmSpec{ReleaseName: "web"},
		},
	}
	harness.Must(t, a.Client.Create(t.Context(), s))
	healthyAt := func(t *testing.T, version string) *v1alpha1.Sync {
		return a.WaitFor(t, s, "Healthy at web "+version, func(s *v1alpha1.Sync) bool {
			return strings.HasPrefix(s.Status.LastAppliedRevision, "web@"+version+"+sha256:") &&
				s.Status.Health == v1alpha1.HealthHealthy && s.Status.Sync == v1alpha1.SyncStatusSynced
		})
	}

	t.Run("the chart's Deployment rolls out, Synced and Healthy", func(t *testing.T) {
		healthyAt(t, "0.1.0")
	})
	t.Run("a new version in range rolls the Deployment", func(t *testing.T) {
		next := map[string]string{}
		for name, content := range webChart {
			next[name] = content
		}
		next["values.yaml"] = "replicaCount: 2\nversion: \"2\"\nautoscaling: {enabled: false, minReplicas: 3}\n"
		publish(t, chartrepo.ChartOf(t, next), "0.2.0")
		healthyAt(t, "0.2.0")
		d := &appsv1.Deployment{}
		harness.Must(t, a.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, d))
		if v := d.Spec.Template.Annotations["version"]; v != "2" {
			t.Errorf("the pod template's version = %q, want 2", v)
		}
	})
}

// checkHookRanFirst checks, by the API server's timestamps, that the chart's
// pre-install Job of commit's run completed before Tether wrote the Deployment.
func (a *agent) checkHookRanFirst(t *testing.T, ns, commit string) {
	t.Helper()
	job := &batchv1.Job{}
	harness.Must(t, a.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "migrate"}, job))
	if run := job.Annotations[plan.HookRunAnnotation]; run != revisionOf(commit)+"/PreSync" || job.Status.CompletionTime == nil {
		t.Fatalf("Job migrate: run %q, completionTime %v; want the completed PreSync hook of %.12s", run, job.Status.CompletionTime, commit)
	}
	d := &appsv1.Deployment{}
	harness.Must(t, a.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, d))
	written := appliedAt(t, d)
	t.Logf("API server timestamps, %.12s: hook Job migrate created %s, completed %s; Deployment web written %s", commit,
		clock(job.CreationTimestamp.Time), clock(job.Status.CompletionTime.Time), clock(written))
	if written.Before(job.Status.CompletionTime.Time) {
		t.Errorf("Deployment web written at %s, before the pre-install hook completed at %s", clock(written), clock(job.Status.CompletionTime.Time))
	}
}
