package main

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"tether.dev/tether/test/gitserver"
)

// TestDiffOfASyncWithKustomize: `tether diff -f` renders a Sync as the agent
// does, its spec.source.directory selecting the files and its spec.kustomize
// put on top.
func TestDiffOfASyncWithKustomize(t *testing.T) {
	e := newDiffEnv(t)
	repo := gitserver.NewLocalRepo(t, "deploy")
	repo.Commit(t, map[string]string{
		"apps/web/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {greeting: hello}\n",
		"apps/web/skip.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: skipped}\n",
	}, "web")
	syncFile := filepath.Join(t.TempDir(), "sync.yaml")
	writeFile(t, syncFile, fmt.Sprintf(`apiVersion: tether.dev/v1alpha1
kind: Sync
metadata: {name: web, namespace: tether-system}
spec:
  source: {url: %q, ref: {branch: main}, path: apps/web, directory: {exclude: skip.yaml}}
  destination: {namespace: %s}
  kustomize:
    namePrefix: prod-
    patches:
    - patch: '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config"}, "data": {"greeting": "bonjour"}}'
`, repo.URL(), e.ns))

	out, errOut, code := e.diff(t, "-f", syncFile)
	if code != 1 {
		t.Fatalf("exit status %d, want 1 (differs)\nstderr: %s", code, errOut)
	}
	if diff := cmp.Diff([]string{"diff ConfigMap/" + e.ns + "/prod-web-config (created)"}, headers(out)); diff != "" {
		t.Errorf("objects shown (-want +got):\n%s", diff)
	}
	if line := "+  greeting: bonjour"; !hasLine(out, line) {
		t.Errorf("output lacks the line %q:\n%s", line, out)
	}
}
