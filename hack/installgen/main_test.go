package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
