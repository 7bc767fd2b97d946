package main

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

func TestSplitImage(t *testing.T) {
	for ref, want := range map[string][2]string{
		"ghcr.io/tether-dev/tether:v0.1.0":   {"ghcr.io/tether-dev/tether", "v0.1.0"},
		"localhost:5000/tether":              {"localhost:5000/tether", ""},
		"localhost:5000/tether:v1":           {"localhost:5000/tether", "v1"},
		"ghcr.io/tether-dev/tether@sha256:0": {"ghcr.io/tether-dev/tether", "sha256:0"},
		"busybox":                            {"busybox", ""},
	} {
		if name, tag := splitImage(ref); name != want[0] || tag != want[1] {
			t.Errorf("splitImage(%q) = %q, %q; want %q, %q", ref, name, tag, want[0], want[1])
		}
	}
}

// TestRenderPinsTheReleaseAndRefusesLatest renders a kustomization of one
// Deployment: with -version the agent's image takes that tag, and an image tagged
// latest, or not at all, is refused by name.
func TestRenderPinsTheReleaseAndRefusesLatest(t *testing.T) {
	dir := t.TempDir()
	write := func(image string) {
		deployment := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: tether}\nspec:\n  template:\n    spec:\n      containers:\n      - {name: controller, image: " + image + "}\n"
		for name, data := range map[string]string{"kustomization.yaml": "resources: [deployment.yaml]\n", "deployment.yaml": deployment} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(agentImage + ":v0.1.0")
	out, err := render(dir, "v0.2.0")
	if err != nil || !strings.Contains(string(out), "image: "+agentImage+":v0.2.0") {
		t.Errorf("render with -version v0.2.0: %v\n%s", err, out)
	}
	for _, image := range []string{agentImage + ":latest", "busybox"} {
		write(image)
		if _, err := render(dir, ""); err == nil || !strings.Contains(err.Error(), image) {
			t.Errorf("image %s: error %v, want a refusal naming it", image, err)
		}
	}
	if err := run(dir, t.TempDir(), "latest"); err == nil {
		t.Error("-version latest was accepted")
	}
}

// TestTheInstallAdmitsOnlyTheAgentsPorts reads the generated install.yaml: its
// NetworkPolicy selects the agent's pods, admits ingress only to the metrics,
// probe and webhook ports, and those are every port the agent's container has.
func TestTheInstallAdmitsOnlyTheAgentsPorts(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var policy networkingv1.NetworkPolicy
	var deployment appsv1.Deployment
	for _, doc := range strings.Split(string(data), "\n---\n") {
		switch {
		case strings.Contains(doc, "\nkind: NetworkPolicy\n"):
			err = sigsyaml.Unmarshal([]byte(doc), &policy)
		case strings.Contains(doc, "\nkind: Deployment\n"):
			err = sigsyaml.Unmarshal([]byte(doc), &deployment)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(policy.Spec.PodSelector, *deployment.Spec.Selector) {
		t.Errorf("NetworkPolicy selects %v, the Deployment's pods are %v", policy.Spec.PodSelector, deployment.Spec.Selector)
	}
	if !slices.Equal(policy.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(policy.Spec.Ingress) != 1 || len(policy.Spec.Ingress[0].From) != 0 {
		t.Fatalf("NetworkPolicy spec %+v: want one ingress rule of ports only", policy.Spec)
	}
	var admitted, container []string
	for _, p := range policy.Spec.Ingress[0].Ports {
		admitted = append(admitted, p.Port.String())
	}
	for _, p := range deployment.Spec.Template.Spec.Containers[0].Ports {
		container = append(container, p.Name)
	}
	slices.Sort(admitted)
	slices.Sort(container)
	want := []string{"http-health", "http-metrics", "http-webhook"}
	if !slices.Equal(admitted, want) || !slices.Equal(container, want) {
		t.Errorf("NetworkPolicy admits %v, the container has ports %v; want both %v", admitted, container, want)
	}
}
