package rollout

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/test/harness"
)

// captureDir, when set (go test ./test/rollout -args -capture ../../health/testdata),
// makes the tests write the live objects they reach into it: the fixtures of
// health's table tests are objects as the control plane wrote them.
var captureDir = flag.String("capture", "", "write the live objects the tests reach into this directory")

// capture writes the live object gvk ns/name, and the pods it selects when pods is
// true, as one YAML stream to <captureDir>/<file>.yaml: the object first, its pods
// after. how, when given, says how the state was reached where a controller of the
// test control plane did not write it (a status set through the status
// subresource). Without -capture it does nothing.
func capture(t *testing.T, c client.Client, gvk schema.GroupVersionKind, ns, name, file string, pods bool, how ...string) {
	t.Helper()
	if *captureDir == "" {
		return
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj))
	docs := []*unstructured.Unstructured{obj}
	if pods {
		sel, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "selector", "matchLabels")
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("v1")
		list.SetKind("PodList")
		harness.Must(t, c.List(t.Context(), list, client.InNamespace(ns), client.MatchingLabels(sel)))
		for i := range list.Items {
			docs = append(docs, &list.Items[i])
		}
	}
	writeFixture(t, file, strings.Join(how, " "), docs...)
}

// captureObject writes obj, an object as the API server returned it (to a create,
// say, before any controller saw it), to <captureDir>/<file>.yaml; how says when
// it was taken. Without -capture it does nothing.
func captureObject(t *testing.T, obj *unstructured.Unstructured, file, how string) {
	t.Helper()
	if *captureDir == "" {
		return
	}
	writeFixture(t, file, how, obj.DeepCopy())
}

func writeFixture(t *testing.T, file, how string, docs ...*unstructured.Unstructured) {
	t.Helper()
	var out []string
	for _, d := range docs {
		d.SetManagedFields(nil)
		unstructured.RemoveNestedField(d.Object, "metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration")
		data, err := yaml.Marshal(d.Object)
		harness.Must(t, err)
		out = append(out, string(data))
	}
	path := filepath.Join(*captureDir, file+".yaml")
	harness.Must(t, os.MkdirAll(filepath.Dir(path), 0o755))
	header := "# Captured live from the control plane of test/rollout (" + t.Name() + ").\n"
	if how != "" {
		header += "# " + how + "\n"
	}
	harness.Must(t, os.WriteFile(path, []byte(header+strings.Join(out, "---\n")), 0o644))
}

var (
	deploymentKind  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	statefulSetKind = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	daemonSetKind   = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}
	jobKind         = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	cronJobKind     = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "CronJob"}
	pvcKind         = schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"}
	podKind         = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	serviceKind     = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	ingressKind     = schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}
	hpaKind         = schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}
	apiServiceKind  = schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}
	crdKind         = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
)

// firstPod returns the name of the first pod with label app=name in ns.
func firstPod(t testing.TB, c client.Client, ns, app string) string {
	t.Helper()
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "PodList"})
	harness.Must(t, c.List(t.Context(), list, client.InNamespace(ns), client.MatchingLabels{"app": app}))
	if len(list.Items) == 0 {
		t.Fatalf("no pod of %s in %s", app, ns)
	}
	return list.Items[0].Name
}
