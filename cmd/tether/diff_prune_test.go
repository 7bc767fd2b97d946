package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/test/gitserver"
)

const prunedConfigMap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {greeting: hello}\n"

// syncManifest writes a Sync of path in the repository at url, into ns, with
// extra spec lines.
func syncManifest(t *testing.T, url, ns, extra string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "sync.yaml")
	writeFile(t, file, fmt.Sprintf(`apiVersion: tether.dev/v1alpha1
kind: Sync
metadata: {name: web, namespace: %s}
spec:
  source: {url: %q, ref: {branch: main}, path: apps/web}
  destination: {namespace: %s}
%s`, ns, url, ns, extra))
	return file
}

// TestDiffShowsWhatLeftGitByItsLabel diffs a Sync the cluster holds no Sync object
// of (the CRD is not even installed here): what it applied is found by the
// tether.dev/sync label and owner mark, as the agent rebuilds a lost inventory.
func TestDiffShowsWhatLeftGitByItsLabel(t *testing.T) {
	e := newDiffEnv(t)
	repo := gitserver.NewLocalRepo(t, "deploy")
	repo.Commit(t, map[string]string{
		"apps/web/a.yaml": fmt.Sprintf(prunedConfigMap, "web-a"),
		"apps/web/b.yaml": fmt.Sprintf(prunedConfigMap, "web-b"),
	}, "web")
	// The Sync lives in the test's namespace: the label search covers the cluster.
	owner := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web"}}
	applied := []*unstructured.Unstructured{decode(t, fmt.Sprintf(prunedConfigMap, "web-a")), decode(t, fmt.Sprintf(prunedConfigMap, "web-b"))}
	plan.MarkOwned(applied, owner)
	e.applyObjects(t, applied...)
	// Another Sync's object, and an unmarked one, carry the same kind in the namespace.
	other := decode(t, fmt.Sprintf(prunedConfigMap, "not-ours"))
	plan.MarkOwned([]*unstructured.Unstructured{other}, &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "other"}})
	e.applyObjects(t, other, decode(t, fmt.Sprintf(prunedConfigMap, "unmarked")))
	repo.Commit(t, map[string]string{"apps/web/b.yaml": ""}, "remove web-b")

	t.Run("an object that left git shows as pruned, with the reason", func(t *testing.T) {
		out, errOut, code := e.diff(t, "-f", syncManifest(t, repo.URL(), e.ns, ""))
		want := "diff ConfigMap/" + e.ns + "/web-b (pruned)\n# not in git any more: the agent would delete it\n"
		if code != 1 || out != want {
			t.Errorf("exit status %d, stdout %q, stderr %q; want 1 and %q", code, out, errOut, want)
		}
	})

	t.Run("with prune off it shows as left in the cluster, and why", func(t *testing.T) {
		out, errOut, code := e.diff(t, "-f", syncManifest(t, repo.URL(), e.ns, "  prune: false\n"))
		want := "diff ConfigMap/" + e.ns + "/web-b (left in the cluster)\n# not in git any more; not pruned: prune is off\n"
		if code != 1 || out != want {
			t.Errorf("exit status %d, stdout %q, stderr %q; want 1 and %q", code, out, errOut, want)
		}
	})

	t.Run("an object protected from prune is no difference", func(t *testing.T) {
		e.edit(t, "ConfigMap", "web-b", func(o *unstructured.Unstructured) {
			o.SetAnnotations(map[string]string{v1alpha1.OwnedByAnnotation: e.ns + "/web", v1alpha1.PruneAnnotation: "disabled"})
		})
		out, errOut, code := e.diff(t, "-f", syncManifest(t, repo.URL(), e.ns, ""))
		if code != 0 || out != "" {
			t.Errorf("exit status %d, stdout %q, stderr %q; want 0 and nothing printed", code, out, errOut)
		}
	})
}

func TestDiffReadsTheSecretRefOnlyWhenAsked(t *testing.T) {
	e := newDiffEnv(t)
	const user, password = "deployer", "s3cret-git-password"
	git := gitserver.Start(t, gitserver.Options{Username: user, Password: password})
	repo := git.CreateRepo(t, "deploy")
	repo.Commit(t, map[string]string{"apps/web/a.yaml": fmt.Sprintf(prunedConfigMap, "web-a")}, "web")
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "git-credentials"},
		Data:       map[string][]byte{"username": []byte(user), "password": []byte(password)},
	}
	if err := e.c.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "sync.yaml")
	writeFile(t, file, fmt.Sprintf(`apiVersion: tether.dev/v1alpha1
kind: Sync
metadata: {name: web, namespace: %s}
spec:
  source: {url: %q, ref: {branch: main}, path: apps/web, secretRef: {name: git-credentials}}
  destination: {namespace: %s}
`, e.ns, repo.URL(), e.ns))

	t.Run("without --use-secret-ref the repository refuses, and the flag is named", func(t *testing.T) {
		out, errOut, code := e.diff(t, "-f", file)
		if code != 2 || !strings.Contains(errOut, "--use-secret-ref") {
			t.Errorf("exit status %d, stderr %q; want 2 and a note naming --use-secret-ref", code, errOut)
		}
		assertNoSecret(t, out+errOut, password)
	})

	t.Run("with it the Secret's credentials fetch the repository", func(t *testing.T) {
		out, errOut, code := e.diff(t, "-f", file, "--use-secret-ref")
		if code != 1 || !strings.Contains(out, "diff ConfigMap/"+e.ns+"/web-a (created)") {
			t.Errorf("exit status %d, stdout %q, stderr %q; want 1 and web-a created", code, out, errOut)
		}
		assertNoSecret(t, out+errOut, password)
	})

	t.Run("a Secret the caller may not read is an error that names it", func(t *testing.T) {
		out, errOut, code := e.diff(t, "-f", file, "--use-secret-ref", "--as", "system:serviceaccount:"+e.ns+":nobody")
		if code != 2 || !strings.Contains(errOut, "Secret "+e.ns+"/git-credentials") {
			t.Errorf("exit status %d, stderr %q; want 2 and the Secret named", code, errOut)
		}
		assertNoSecret(t, out+errOut, password)
	})
}
