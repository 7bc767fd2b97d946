package charts

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/agentbin"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// syncCase is a public chart as a Sync applies it.
type syncCase struct {
	// archive is the packaged chart in testdata/.
	archive string
	// name is the Sync's and the release's name.
	name string
	// values is the Sync's values file, which helm template is given too.
	values string
	// objects is how many objects helm template renders with values, and crds
	// how many of them are CustomResourceDefinitions: both sides rendering
	// fewer (a values file not read, a chart unpacked empty) fails the test.
	objects, crds int
}

// syncedCharts are the public charts, each as one Sync of one agent. The API
// server runs no controllers (no scheduler, no kubelet, no Job controller), so
// what waits on a running pod cannot finish, and the values turn off the parts
// of a chart that would: kube-prometheus-stack's and ingress-nginx's admission
// webhooks (prometheusOperator.admissionWebhooks.enabled=false,
// controller.admissionWebhooks.enabled=false: each is a pair of hook Jobs that
// make a certificate and patch it into webhook configurations, and the webhook
// configurations themselves, which would route the API server's admission of
// the charts' own objects to a pod that never runs), and argo-cd's
// redisSecretInit (a pre-install hook Job that makes the redis password
// Secret). The render test (render_test.go) renders the charts with those parts
// on. ingress-nginx's ServiceMonitor is left off here: its CRD would come from
// another Sync of the test (kube-prometheus-stack's). With these values no
// chart renders differently whether the other charts' CRDs are served yet: each
// template that asks .Capabilities for one of them is also switched off by a
// value. Workload replicas are compared with helm template's, so a values file
// the Sync did not read shows (traefik's 2 replicas, argo-cd's redis-ha).
var syncedCharts = map[string]syncCase{
	"kube-prometheus-stack": {
		archive: "kube-prometheus-stack-88.5.3.tgz", name: "monitoring",
		values:  "grafana:\n  adminPassword: conformance\nprometheusOperator:\n  admissionWebhooks:\n    enabled: false\n",
		objects: 123, crds: 10,
	},
	"ingress-nginx": {
		archive: "ingress-nginx-4.15.1.tgz", name: "ingress",
		values:  "controller:\n  admissionWebhooks:\n    enabled: false\n  metrics:\n    enabled: true\n  autoscaling:\n    enabled: true\n",
		objects: 11,
	},
	"argo-cd with redis-ha": {
		archive: "argo-cd-10.1.1.tgz", name: "argocd",
		values:  "redis-ha:\n  enabled: true\nredisSecretInit:\n  enabled: false\n",
		objects: 68, crds: 3,
	},
	"grafana": {
		archive: "grafana-12.11.1.tgz", name: "grafana", values: "adminPassword: conformance\n",
		objects: 7,
	},
	"traefik": {
		archive: "traefik-41.3.0.tgz", name: "edge", values: "deployment:\n  replicas: 2\n",
		objects: 31, crds: 25,
	},
	"bitnami's redis with bitnami/common": {
		archive: "redis-23.1.1.tgz", name: "cache", values: "auth:\n  password: conformance\n",
		objects: 14,
	},
}

// syncedChart is one chart of syncedCharts as the test committed and synced it.
type syncedChart struct {
	sync   *v1alpha1.Sync
	commit string
	// created is when the test created the Sync.
	created time.Time
	// want is helm template's render of the committed chart, with the Sync's
	// values and the capabilities the agent sees.
	want objects
}

// TestSyncsOfPublicChartsApplyTheObjectsHelmTemplateLists: each public chart,
// as released, committed to a git repository and synced by the shipped agent
// (one agent, one Sync and namespace per chart, all at once) into a real API
// server with a values file, is applied in full (Ready at its commit: the API
// server runs no controllers, so Healthy is not asked) and leaves exactly the
// objects helm template renders with the same values and the capabilities the
// agent sees (the server's version and every API it serves), CRDs included:
// each in the Sync's inventory and in the cluster, owned by the Sync. Helm's
// test hooks (argo-cd's redis-ha has two), which Tether does not apply, are
// neither.
//
// The Syncs are left in place when the test ends: the control plane is the
// package's own (TestMain) and goes with it, pruning is the sync package's
// tests' concern, and waiting for six Syncs to prune some 250 objects would
// double the test's time.
func TestSyncsOfPublicChartsApplyTheObjectsHelmTemplateLists(t *testing.T) {
	helm := helmCLI(t)
	c := agentbin.Client(t)
	cp := controlplane.Shared(t)
	caps := serverCapabilities(t)
	git := gitserver.Start(t, gitserver.Options{})
	startAgent(t, cp.KubeconfigPath())

	synced := map[string]syncedChart{}
	for name, sc := range syncedCharts {
		ns := controlplane.NewNamespace(t, cp.Config())
		r := release{name: sc.name, namespace: ns, values: sc.values, caps: caps}
		chart := unpack(t, sc.archive)
		writeValues(t, chart, r)
		repo := git.CreateRepo(t, sc.name)
		path := "charts/" + sc.name
		commit := commitChart(t, repo, chart, path, name+" as released, and our values")
		want := helmTemplate(t, helm, chart, r)
		s := &v1alpha1.Sync{
			ObjectMeta: metav1.ObjectMeta{Name: sc.name, Namespace: ns},
			Spec: v1alpha1.SyncSpec{
				Source: v1alpha1.SourceSpec{URL: repo.URL(), Ref: v1alpha1.GitRef{Branch: "main"}, Path: path,
					Interval: &metav1.Duration{Duration: 10 * time.Second}},
				Destination: v1alpha1.DestinationSpec{Namespace: ns},
				Helm:        &v1alpha1.HelmSpec{ReleaseName: r.name, ValuesFiles: []string{valuesFile}},
			},
		}
		harness.Must(t, c.Create(t.Context(), s))
		synced[name] = syncedChart{sync: s, commit: commit, created: time.Now(), want: want}
	}

	for name, sc := range syncedCharts {
		t.Run(name, func(t *testing.T) { checkSyncedChart(t, c, sc, synced[name]) })
	}
}

// checkSyncedChart waits until sc's Sync is Ready at its commit, then compares
// what it applied with helm template's render.
func checkSyncedChart(t *testing.T, c client.Client, sc syncCase, synced syncedChart) {
	s, ns := synced.sync, synced.sync.Namespace
	got := &v1alpha1.Sync{}
	harness.Eventually(t, waitTimeout, "the Sync Ready at "+synced.commit, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
			return false, err
		}
		ready := apimeta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ReadyCondition)
		if !ready || !strings.HasSuffix(got.Status.LastAppliedRevision, synced.commit) {
			return false, fmt.Errorf("status: revision %q, conditions %+v", got.Status.LastAppliedRevision, got.Status.Conditions)
		}
		return true, nil
	})
	t.Logf("Ready at %s %v after the Syncs were created", synced.commit, time.Since(synced.created).Round(time.Millisecond))

	applied, testHooks := splitTestHooks(t, synced.want)
	wantRefs := refsOf(t, c, applied, ns)
	t.Run("the inventory is helm template's objects, CRDs included", func(t *testing.T) {
		if len(synced.want) != sc.objects {
			t.Errorf("helm template rendered %d objects, want %d (the vendored chart's with the Sync's values)", len(synced.want), sc.objects)
		}
		gotNames, wantNames := refNames(slices.Values(v1alpha1.InventoryRefs(got.Status.Objects))), refNames(maps.Values(wantRefs))
		if extra, missing := setDiff(gotNames, wantNames), setDiff(wantNames, gotNames); len(extra)+len(missing) > 0 {
			t.Errorf("the Sync's inventory differs from helm template's %d objects:\nonly in the inventory: %v\nonly in helm template: %v",
				len(wantNames), extra, missing)
		}
		crds := 0
		for k := range applied {
			if k.Kind == "CustomResourceDefinition" {
				crds++
			}
		}
		if crds != sc.crds {
			t.Errorf("helm template rendered %d CRDs, want the chart's %d", crds, sc.crds)
		}
	})

	t.Run("each of them is in the cluster, applied by tether", func(t *testing.T) {
		for _, ref := range v1alpha1.InventoryRefs(got.Status.Objects) {
			live, err := getLive(t.Context(), c, ref)
			if err != nil {
				t.Errorf("%s: %v", refName(ref), err)
				continue
			}
			if owner := live.GetAnnotations()[v1alpha1.OwnedByAnnotation]; owner != ns+"/"+s.Name {
				t.Errorf("%s: owned by %q, want %s/%s", refName(ref), owner, ns, s.Name)
			}
		}
	})

	t.Run("the workloads have helm template's replicas", func(t *testing.T) {
		for k, ref := range wantRefs {
			wantReplicas, found, _ := unstructured.NestedFloat64(applied[k], "spec", "replicas")
			if !found || (k.Kind != "Deployment" && k.Kind != "StatefulSet") {
				continue
			}
			live, err := getLive(t.Context(), c, ref)
			harness.Must(t, err)
			if gotReplicas, _, _ := unstructured.NestedInt64(live.Object, "spec", "replicas"); gotReplicas != int64(wantReplicas) {
				t.Errorf("%s: %d replicas live, %v in helm template", refName(ref), gotReplicas, wantReplicas)
			}
		}
	})

	t.Run("helm's test hooks are not applied", func(t *testing.T) {
		for _, ref := range refsOf(t, c, testHooks, ns) {
			if _, err := getLive(t.Context(), c, ref); !apierrors.IsNotFound(err) {
				t.Errorf("%s: a test hook, which Tether does not apply: %v", refName(ref), err)
			}
		}
	})
}

// splitTestHooks separates from objs Helm's test hooks, which a Sync does not
// apply (docs/ordering.md). Any other hook fails the test: a control plane
// without controllers cannot complete it, and the case's values must turn it
// off.
func splitTestHooks(t *testing.T, objs objects) (applied, testHooks objects) {
	t.Helper()
	applied, testHooks = objects{}, objects{}
	for k, obj := range objs {
		phases := (&unstructured.Unstructured{Object: obj}).GetAnnotations()[v1alpha1.HelmHookAnnotation]
		switch {
		case phases == "":
			applied[k] = obj
		case isTestHook(phases):
			testHooks[k] = obj
		default:
			t.Errorf("%s is a %s hook, which a control plane without controllers cannot complete: turn it off in the case's values", k, phases)
		}
	}
	return applied, testHooks
}

// isTestHook reports whether each of a helm.sh/hook annotation's phases is one
// of Helm's test phases.
func isTestHook(phases string) bool {
	for p := range strings.SplitSeq(phases, ",") {
		if p = strings.TrimSpace(p); p != "test" && p != "test-success" && p != "test-failure" {
			return false
		}
	}
	return true
}
