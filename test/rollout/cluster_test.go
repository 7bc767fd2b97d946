package rollout

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// The kinds whose health no controller of a bare cluster decides alone: a load
// balancer's address, an autoscaler's metrics, an aggregated API's backend, a
// CRD's names. The test control plane has no cloud or ingress controller; where
// none writes a state, the tests write it through the status subresource, as that
// controller would, and say so in the fixtures they capture.

func TestLoadBalancersAndIngressesWaitForAnAddress(t *testing.T) {
	a := startAgent(t, agentOptions{})
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo, commit := startRepo(t, map[string]string{"web.yaml": `apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: web-lb}
spec:
  type: LoadBalancer
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  rules: [{host: shop.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}}]
`})
	s := a.newSync(t, ns, repo)

	t.Run("without an address they are Progressing", func(t *testing.T) {
		got := a.WaitFor(t, s, "the load balancer and the ingress Progressing", func(s *v1alpha1.Sync) bool {
			lb, _ := resource(s.Status, "Service", "web-lb")
			ing, _ := resource(s.Status, "Ingress", "web")
			return strings.HasSuffix(s.Status.LastAppliedRevision, commit) && lb.Health == v1alpha1.HealthProgressing &&
				ing.Health == v1alpha1.HealthProgressing && healthOf(s.Status, "Service", "web") == v1alpha1.HealthHealthy
		})
		if r, _ := resource(got.Status, "Service", "web-lb"); !strings.Contains(r.Message, "load balancer") {
			t.Errorf("Service/web-lb says %q, want it to wait for the load balancer", r.Message)
		}
		if r, _ := resource(got.Status, "Ingress", "web"); !strings.Contains(r.Message, "address") {
			t.Errorf("Ingress/web says %q, want it to wait for an address", r.Message)
		}
		capture(t, a.Client, serviceKind, ns, "web", "service/healthy-cluster-ip", false)
		capture(t, a.Client, serviceKind, ns, "web-lb", "service/progressing-no-address", false)
		capture(t, a.Client, ingressKind, ns, "web", "ingress/progressing-no-address", false)
	})

	t.Run("once their controllers publish an address they are Healthy", func(t *testing.T) {
		setStatus(t, a.Client, serviceKind, ns, "web-lb", `{"loadBalancer": {"ingress": [{"ip": "203.0.113.10"}]}}`)
		setStatus(t, a.Client, ingressKind, ns, "web", `{"loadBalancer": {"ingress": [{"hostname": "lb-1234.example.net"}]}}`)
		a.waitHealth(t, s, commit, v1alpha1.HealthHealthy)
		capture(t, a.Client, serviceKind, ns, "web-lb", "service/healthy-address", false,
			"status.loadBalancer written through the status subresource by the test, as a cloud controller would (none runs here).")
		capture(t, a.Client, ingressKind, ns, "web", "ingress/healthy-address", false,
			"status.loadBalancer written through the status subresource by the test, as an ingress controller would (none runs here).")
	})
}

// setStatus merges status, a JSON object, into the status of the live object gvk
// ns/name through its status subresource.
func setStatus(t testing.TB, c client.Client, gvk schema.GroupVersionKind, ns, name, status string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(ns)
	obj.SetName(name)
	harness.Must(t, c.Status().Patch(t.Context(), obj, client.RawPatch(types.MergePatchType, []byte(`{"status": `+status+`}`))))
}

// TestAutoscalersAndAggregatedAPIsAreJudged runs the real autoscaler controller
// (kube-controller-manager's) and the API server's aggregator against a resource
// metrics API served by the test in place of metrics-server: it reports the pods
// of web, not those of batch.
func TestAutoscalersAndAggregatedAPIsAreJudged(t *testing.T) {
	a := startAgent(t, agentOptions{})
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	metrics := startMetricsAPI(t, a.Client, func(labels map[string]string) (string, bool) { return "50Mi", labels["app"] == "web" })
	workload := func(name string, replicas int) string {
		return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: %[2]d
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{name: app, image: "registry.k8s.io/pause:3.10"}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: %[1]s}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: %[1]s}
  minReplicas: 1
  maxReplicas: 3
  metrics: [{type: Resource, resource: {name: memory, target: {type: AverageValue, averageValue: 100Mi}}}]
`, name, replicas)
	}
	repo, commit := startRepo(t, map[string]string{
		"web.yaml":   workload("web", 1),
		"batch.yaml": workload("batch", 1),
		"idle.yaml":  workload("idle", 0),
		"apis.yaml": fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: metrics}
spec: {type: ExternalName, externalName: localhost}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  group: metrics.k8s.io
  version: v1beta1
  service: {namespace: %[1]s, name: metrics, port: %[2]s}
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 100
  versionPriority: 100
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.broken.tether.dev}
spec:
  group: broken.tether.dev
  version: v1alpha1
  service: {namespace: %[1]s, name: missing, port: 443}
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 100
  versionPriority: 100
`, ns, port(metrics)),
	})
	s := a.newSync(t, ns, repo, func(s *v1alpha1.Sync) { s.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete })
	// An APIService left behind would fail discovery of its group for the tests
	// after this one, and stall the deletion of their namespaces.
	a.deleteWhenDone(t, s, apiServiceKind, "v1beta1.metrics.k8s.io", "v1alpha1.broken.tether.dev")

	got := a.WaitFor(t, s, "the autoscalers and the API services judged", func(s *v1alpha1.Sync) bool {
		batch, _ := resource(s.Status, "HorizontalPodAutoscaler", "batch")
		idle, _ := resource(s.Status, "HorizontalPodAutoscaler", "idle")
		broken, _ := resource(s.Status, "APIService", "v1alpha1.broken.tether.dev")
		return strings.HasSuffix(s.Status.LastAppliedRevision, commit) &&
			healthOf(s.Status, "HorizontalPodAutoscaler", "web") == v1alpha1.HealthHealthy &&
			healthOf(s.Status, "APIService", "v1beta1.metrics.k8s.io") == v1alpha1.HealthHealthy &&
			batch.Health == v1alpha1.HealthDegraded && idle.Health == v1alpha1.HealthSuspended && broken.Health == v1alpha1.HealthDegraded
	})
	for _, want := range []struct{ kind, name, says string }{
		{"HorizontalPodAutoscaler", "batch", "FailedGetResourceMetric"},
		{"HorizontalPodAutoscaler", "idle", "ScalingDisabled"},
		{"APIService", "v1alpha1.broken.tether.dev", "ServiceNotFound"},
	} {
		if r, _ := resource(got.Status, want.kind, want.name); !strings.Contains(r.Message, want.says) {
			t.Errorf("%s/%s says %q, want it to name %q", want.kind, want.name, r.Message, want.says)
		}
	}
	capture(t, a.Client, hpaKind, ns, "web", "horizontalpodautoscaler/healthy-scaling", false,
		"Its metrics come from the resource metrics API the test serves in place of metrics-server (metrics_test.go).")
	capture(t, a.Client, hpaKind, ns, "batch", "horizontalpodautoscaler/degraded-no-metrics", false,
		"The resource metrics API the test serves in place of metrics-server has no metrics for its pods.")
	capture(t, a.Client, hpaKind, ns, "idle", "horizontalpodautoscaler/suspended-target-scaled-to-zero", false)
	capture(t, a.Client, apiServiceKind, "", "v1beta1.metrics.k8s.io", "apiservice/healthy-available", false,
		"Its backend is the resource metrics API the test serves in place of metrics-server (metrics_test.go).")
	capture(t, a.Client, apiServiceKind, "", "v1.apps", "apiservice/healthy-local", false)
	capture(t, a.Client, apiServiceKind, "", "v1alpha1.broken.tether.dev", "apiservice/degraded-service-not-found", false)

	t.Run("before their controllers assess them, they are Progressing", func(t *testing.T) {
		hpa := createObject(t, a.Client, ns, strings.SplitN(workload("fresh", 1), "---\n", 2)[1])
		captureObject(t, hpa, "horizontalpodautoscaler/progressing-not-assessed", "As the API server answered its creation, before the autoscaler controller saw it.")
		api := createObject(t, a.Client, "", fmt.Sprintf(`apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.fresh.tether.dev}
spec:
  group: fresh.tether.dev
  version: v1alpha1
  service: {namespace: %s, name: missing, port: 443}
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 100
  versionPriority: 100
`, ns))
		captureObject(t, api, "apiservice/progressing-not-assessed", "As the API server answered its creation, before the availability controller saw it.")
	})
}

// createObject creates the object doc (YAML) in ns and returns it as the API server
// answered, and deletes it when the test ends.
func createObject(t *testing.T, c client.Client, ns, doc string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	harness.Must(t, yaml.Unmarshal([]byte(doc), &obj.Object))
	if ns != "" {
		obj.SetNamespace(ns)
	}
	harness.Must(t, c.Create(t.Context(), obj))
	t.Cleanup(func() {
		if err := c.Delete(context.WithoutCancel(t.Context()), obj.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	})
	return obj.DeepCopy()
}

// deleteWhenDone deletes the Sync s when the test ends, waits for it to be gone
// (its deletion policy deletes its objects), and then deletes the cluster-scoped
// objects names of kind gvk, whatever became of the Sync.
func (a *agent) deleteWhenDone(t *testing.T, s *v1alpha1.Sync, gvk schema.GroupVersionKind, names ...string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), time.Minute)
		defer cancel()
		if err := a.Client.Delete(ctx, s); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the Sync: %v", err)
		}
		for ctx.Err() == nil {
			if err := a.Client.Get(ctx, client.ObjectKeyFromObject(s), &v1alpha1.Sync{}); apierrors.IsNotFound(err) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, name := range names {
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(gvk)
			obj.SetName(name)
			if err := a.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s %s: %v", gvk.Kind, name, err)
			}
		}
	})
}

// TestDefinitionsAreJudgedByTheirNames: a CRD is Healthy once Established, and
// Degraded when its names clash with another's (here the Gadget CRD the test
// installs first).
func TestDefinitionsAreJudgedByTheirNames(t *testing.T) {
	a := startAgent(t, agentOptions{})
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	controlplane.InstallCRDs(t, controlplane.Shared(t).Config(), "testdata/crds")
	crd := func(plural, kind string) string {
		return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[1]s.example.tether.dev}
spec:
  group: example.tether.dev
  names: {kind: %[2]s, listKind: %[2]sList, plural: %[1]s, singular: %[3]s}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`, plural, kind, strings.TrimSuffix(plural, "s"))
	}
	repo, commit := startRepo(t, map[string]string{"crds.yaml": crd("widgets", "Widget") + "---\n" + crd("gizmos", "Gadget")})
	s := a.newSync(t, ns, repo, func(s *v1alpha1.Sync) { s.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete })
	a.deleteWhenDone(t, s, crdKind, "widgets.example.tether.dev", "gizmos.example.tether.dev")

	got := a.WaitFor(t, s, "the definitions judged", func(s *v1alpha1.Sync) bool {
		gizmos, _ := resource(s.Status, "CustomResourceDefinition", "gizmos.example.tether.dev")
		return strings.HasSuffix(s.Status.LastAppliedRevision, commit) && gizmos.Health == v1alpha1.HealthDegraded &&
			healthOf(s.Status, "CustomResourceDefinition", "widgets.example.tether.dev") == v1alpha1.HealthHealthy
	})
	if r, _ := resource(got.Status, "CustomResourceDefinition", "gizmos.example.tether.dev"); !strings.Contains(r.Message, "KindConflict") {
		t.Errorf("CustomResourceDefinition/gizmos says %q, want it to name KindConflict", r.Message)
	}
	capture(t, a.Client, crdKind, "", "widgets.example.tether.dev", "customresourcedefinition/healthy-established", false)
	capture(t, a.Client, crdKind, "", "gizmos.example.tether.dev", "customresourcedefinition/degraded-names-conflict", false)

	fresh := createObject(t, a.Client, "", crd("sprockets", "Sprocket"))
	captureObject(t, fresh, "customresourcedefinition/progressing-not-established", "As the API server answered its creation, before the naming and establishing controllers saw it.")
}
