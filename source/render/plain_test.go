package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/result"
)

func TestAPlainDirectoryRendersAsFluxRendersAPathWithoutAKustomization(t *testing.T) {
	// Flux's bootstrap layout: clusters/production holds no kustomization, its
	// flux-system subdirectory does.
	files := map[string]string{
		"clusters/production/apps.yaml":                      "apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n",
		"clusters/production/flux-system/kustomization.yaml": "resources: [gotk-sync.yaml]\nnamespace: flux-system\npatches:\n- path: patch.yaml\n",
		"clusters/production/flux-system/gotk-sync.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sync}\ndata: {interval: 1m}\n",
		"clusters/production/flux-system/patch.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sync}\ndata: {interval: 10m}\n",
		"clusters/production/infra/redis/kustomization.yaml": "resources: [redis.yaml]\nnamePrefix: infra-\n",
		"clusters/production/infra/redis/redis.yaml":         "apiVersion: v1\nkind: Service\nmetadata: {name: redis}\n",
		"clusters/production/infra/namespace.yaml":           "apiVersion: v1\nkind: Namespace\nmetadata: {name: infra}\n",
		"clusters/production/.hidden/kustomization.yaml":     "resources: [cm.yaml]\n",
		"clusters/production/.hidden/cm.yaml":                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hidden}\n",
		"clusters/production/.sourceignore.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hidden-file}\n",
	}
	objs, err := render(t, files, "clusters/production")
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	want := []string{
		"Namespace//apps",
		"ConfigMap/flux-system/sync", // built by its kustomization: patched, in its namespace, once
		"Namespace//infra",
		"Service//infra-redis",
	}
	if diff := cmp.Diff(want, ids(objs)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if data, _ := objs[1].Object["data"].(map[string]any); data["interval"] != "10m" {
		t.Errorf("flux-system's ConfigMap data = %v, want its kustomization's patch applied", data)
	}
}

func TestAPlainDirectoryLeavesOutWhatIsNoManifest(t *testing.T) {
	files := map[string]string{
		"app/deploy.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n---\nreplicaCount: 2\n",
		"app/values.yaml":       "replicaCount: 2\nimage: {repository: nginx}\n",
		"app/charts/index.yaml": "apiVersion: v1\nentries: {}\ngenerated: \"2026-01-01T00:00:00Z\"\n",
		"app/ci/workflow.yml":   "name: ci\non: [push]\njobs: {test: {runs-on: ubuntu-latest}}\n",
		"app/ansible/site.yaml": "- hosts: all\n  tasks: []\n",
		"app/notes.yaml":        "just a string\n",
		"app/package.json":      `{"name": "web", "version": "1.0.0"}`,
		"app/kind-only.yaml":    "kind: Config\nclusters: []\n",
		"app/z-list.yaml":       "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: s}}\n",
		"app/.github/ci.yaml":   "not: [valid\n",
	}
	objs, err := render(t, files, "app")
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	if diff := cmp.Diff([]string{"ConfigMap//web", "Secret//s"}, ids(objs)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}

	t.Run("a file that is not YAML still fails, naming it", func(t *testing.T) {
		_, err := render(t, map[string]string{"app/broken.yaml": "replicaCount: [2\n"}, "app")
		var re *result.RenderError
		if !errors.As(err, &re) || re.File != "app/broken.yaml" {
			t.Errorf("Render = %v, want a result.RenderError naming app/broken.yaml", err)
		}
	})
	t.Run("a document left out still counts against the node budget", func(t *testing.T) {
		bomb := "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
		prev := "a"
		for _, name := range []string{"b", "c", "d", "e", "f", "g", "h"} {
			bomb += name + ": &" + name + " [" + strings.Repeat("*"+prev+",", 9) + "*" + prev + "]\n"
			prev = name
		}
		_, err := render(t, map[string]string{"app/values.yaml": bomb}, "app")
		var re *result.RenderError
		if !errors.As(err, &re) || re.File != "app/values.yaml" || re.Reason != v1alpha1.ReasonRenderLimitExceeded {
			t.Errorf("Render of an alias bomb without apiVersion = %v, want RenderLimitExceeded naming app/values.yaml", err)
		}
	})
	t.Run("DecodeManifests, given one stream to apply, still refuses what is no object", func(t *testing.T) {
		for _, doc := range []string{"replicaCount: 2\n", "just a string\n", "apiVersion: v1\nmetadata: {name: b}\n"} {
			if _, err := DecodeManifests([]byte(doc)); err == nil || !strings.Contains(err.Error(), "not a Kubernetes object") {
				t.Errorf("DecodeManifests(%q) error = %v, want not a Kubernetes object", doc, err)
			}
		}
	})
}

func TestPlainYAMLIsReadAsKubectlReadsIt(t *testing.T) {
	pod := `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: &labels {app: web}
  annotations:
    quoted: "yes"
spec:
  hostNetwork: yes
  enableServiceLinks: off
  containers:
  - &base
    name: web
    image: nginx
  - <<: [*base, {image: busybox, stdin: y}]
    name: sidecar
    env:
    - {name: MODE, value: "0755"}
    securityContext: {runAsUser: 0755}
  nodeSelector: *labels
`
	objs, err := render(t, map[string]string{"pod.yaml": pod}, ".")
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	spec := objs[0].Object["spec"].(map[string]any)
	annotations := objs[0].GetAnnotations()
	containers := spec["containers"].([]any)
	sidecar := containers[1].(map[string]any)
	got := map[string]any{
		"spec.hostNetwork":        spec["hostNetwork"],
		"spec.enableServiceLinks": spec["enableServiceLinks"],
		"annotation quoted":       annotations["quoted"],
		"sidecar.name":            sidecar["name"],
		"sidecar.image":           sidecar["image"],
		"sidecar.stdin":           sidecar["stdin"],
		"sidecar.runAsUser":       sidecar["securityContext"].(map[string]any)["runAsUser"],
		"nodeSelector.app":        spec["nodeSelector"].(map[string]any)["app"],
	}
	want := map[string]any{
		"spec.hostNetwork":        true, // YAML 1.1, as kubectl sends it
		"spec.enableServiceLinks": false,
		"annotation quoted":       "yes",
		"sidecar.name":            "sidecar",
		"sidecar.image":           "nginx", // the first mapping of the merge list wins
		"sidecar.stdin":           true,
		"sidecar.runAsUser":       int64(493), // octal, as YAML 1.1 reads 0755
		"nodeSelector.app":        "web",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}

func TestADocumentKubectlRefusesForItsAliasesIsARenderOverItsBounds(t *testing.T) {
	// Within Tether's own budgets, but kubectl's decoder refuses a document
	// whose aliases expand this far beyond its size, and so does Tether.
	file := worstYAML("aliases", DefaultMaxYAMLNodesPerFile)
	_, err := render(t, map[string]string{"app/cm.yaml": file}, "app")
	var re *result.RenderError
	if !errors.As(err, &re) || re.File != "app/cm.yaml" || re.Reason != v1alpha1.ReasonRenderLimitExceeded {
		t.Errorf("Render = %v, want RenderLimitExceeded naming app/cm.yaml", err)
	}
}
