package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/signing"
)

// TestDiffVerifiesAsTheAgentDoes: `tether diff` of a Sync with
// spec.source.verify reads its keys Secret as the user and refuses the
// revision the agent would refuse, naming the commit; a signed one diffs.
func TestDiffVerifiesAsTheAgentDoes(t *testing.T) {
	e := newDiffEnv(t)
	repo := gitserver.NewLocalRepo(t, "deploy")
	alice := signing.NewGPG(t, "Alice", "alice@example.com")
	if err := e.c.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "trusted-keys"},
		Data: map[string][]byte{"alice.asc": alice.Public}}); err != nil {
		t.Fatal(err)
	}
	syncFile := filepath.Join(t.TempDir(), "sync.yaml")
	writeFile(t, syncFile, fmt.Sprintf(`apiVersion: tether.dev/v1alpha1
kind: Sync
metadata: {name: web, namespace: %s}
spec:
  source: {url: %q, ref: {branch: main}, path: apps/web, verify: {secretRef: {name: trusted-keys}}}
  destination: {namespace: %s}
`, e.ns, repo.URL(), e.ns))
	configMap := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {greeting: %s}\n"

	unsigned := repo.Commit(t, map[string]string{"apps/web/configmap.yaml": fmt.Sprintf(configMap, "unsigned")}, "nobody signs")
	_, errOut, code := e.diff(t, "-f", syncFile)
	if code != 2 || !strings.Contains(errOut, "commit "+unsigned+": not signed") {
		t.Errorf("diff of an unsigned head: exit status %d, stderr %q; want 2 naming the commit as not signed", code, errOut)
	}

	repo.SetEnv(alice.Env()...)
	repo.Configure(t, alice.GitConfig())
	repo.Commit(t, map[string]string{"apps/web/configmap.yaml": fmt.Sprintf(configMap, "signed")}, "alice signs")
	out, errOut, code := e.diff(t, "-f", syncFile)
	if code != 1 || !strings.Contains(out, "diff ConfigMap/"+e.ns+"/web-config (created)") {
		t.Errorf("diff of a signed head: exit status %d, stdout %q, stderr %q; want the ConfigMap created", code, out, errOut)
	}
}
