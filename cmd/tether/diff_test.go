package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/plan"
	"tether.dev/tether/source"
	"tether.dev/tether/test/chartrepo"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/ociregistry"
)

// TestMain runs the package's tests against one real kube-apiserver and etcd; each
// test of `tether diff` works in a namespace of its own.
func TestMain(m *testing.M) {
	source.ServeRenderWorker()
	os.Exit(controlplane.RunMain(m, controlplane.Options{}))
}

// The Secret value in testdata/diff/app, and one the cluster may hold instead.
const (
	gitPassword  = "correct-horse-battery-staple"
	livePassword = "hunter2-in-the-cluster"
)

func TestDiffOfADirectory(t *testing.T) {
	e := newDiffEnv(t)
	dir := "testdata/diff/app"

	t.Run("before the first apply every object shows as created", func(t *testing.T) {
		out, errOut, code := e.diff(t, "--dir", dir, "-n", e.ns)
		if code != 1 {
			t.Fatalf("exit status %d, want 1 (differs)\nstderr: %s", code, errOut)
		}
		want := []string{
			"diff ConfigMap/" + e.ns + "/web-config (created)",
			"diff Secret/" + e.ns + "/web-credentials (created)",
			"diff Deployment/" + e.ns + "/web (created)",
		}
		if diff := cmp.Diff(want, headers(out)); diff != "" {
			t.Errorf("objects shown (-want +got):\n%s\n%s", diff, out)
		}
		for _, line := range []string{"+  greeting: hello", "+  password: '*** (added)'", "+        - image: registry.k8s.io/pause:3.10"} {
			if !hasLine(out, line) {
				t.Errorf("output lacks the line %q:\n%s", line, out)
			}
		}
		if removed := changedLines(out, '-'); len(removed) != 0 {
			t.Errorf("a missing object shows removed lines %q, want a diff from nothing", removed)
		}
		assertNoSecret(t, out+errOut, gitPassword)
	})

	e.apply(t, dir)

	t.Run("once applied, nothing differs: stdout is empty and stderr says so", func(t *testing.T) {
		out, errOut, code := e.diff(t, "--dir", dir, "-n", e.ns)
		if code != 0 || out != "" || errOut != "tether: no differences: the cluster holds what git declares\n" {
			t.Errorf("exit status %d, stdout %q, stderr %q; want 0, nothing on stdout and 'no differences' on stderr", code, out, errOut)
		}
	})

	t.Run("a value changed in the cluster is the only line that differs", func(t *testing.T) {
		e.edit(t, "ConfigMap", "web-config", func(o *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(o.Object, "bonjour", "data", "greeting")
		})
		out, errOut, code := e.diff(t, "--dir", dir, "-n", e.ns)
		if code != 1 {
			t.Fatalf("exit status %d, want 1 (differs)\nstderr: %s", code, errOut)
		}
		if diff := cmp.Diff([]string{"diff ConfigMap/" + e.ns + "/web-config (configured)"}, headers(out)); diff != "" {
			t.Errorf("objects shown (-want +got):\n%s", diff)
		}
		want := []string{"-  greeting: bonjour", "+  greeting: hello"}
		if diff := cmp.Diff(want, append(changedLines(out, '-'), changedLines(out, '+')...)); diff != "" {
			t.Errorf("changed lines (-want +got):\n%s\n%s", diff, out)
		}
		if !hasLine(out, "   farewell: goodbye") {
			t.Errorf("the change has no context around it:\n%s", out)
		}
	})
}

func TestDiffNeverPrintsSecretValues(t *testing.T) {
	e := newDiffEnv(t)
	dir := "testdata/diff/app"
	e.apply(t, dir)
	e.edit(t, "Secret", "web-credentials", func(o *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(o.Object, base64.StdEncoding.EncodeToString([]byte(livePassword)), "data", "password")
	})

	out, errOut, code := e.diff(t, "--dir", dir, "-n", e.ns)
	if code != 1 {
		t.Fatalf("exit status %d, want 1 (differs)\nstderr: %s", code, errOut)
	}
	if diff := cmp.Diff([]string{"diff Secret/" + e.ns + "/web-credentials (configured)"}, headers(out)); diff != "" {
		t.Errorf("objects shown (-want +got):\n%s", diff)
	}
	want := []string{"-  password: '***'", "+  password: '*** (changed)'"}
	if diff := cmp.Diff(want, append(changedLines(out, '-'), changedLines(out, '+')...)); diff != "" {
		t.Errorf("changed lines (-want +got):\n%s\n%s", diff, out)
	}
	if !hasLine(out, "   username: '***'") {
		t.Errorf("the unchanged value is not shown masked:\n%s", out)
	}
	assertNoSecret(t, out+errOut, gitPassword, livePassword)
}

func TestDiffOfAnAppThatBringsItsNamespace(t *testing.T) {
	e := newDiffEnv(t)
	out, errOut, code := e.diff(t, "--dir", "testdata/diff/newns")
	if code != 1 {
		t.Fatalf("exit status %d, want 1 (differs)\nstderr: %s", code, errOut)
	}
	want := []string{
		"diff Namespace/tether-diff-new-namespace (created)",
		"diff ConfigMap/tether-diff-new-namespace/web-config (created)",
	}
	if diff := cmp.Diff(want, headers(out)); diff != "" {
		t.Errorf("objects shown (-want +got):\n%s\n%s", diff, out)
	}
	for _, line := range []string{
		"# namespace tether-diff-new-namespace does not exist yet: shown as rendered, not validated by the API server",
		"+  greeting: hello",
	} {
		if !hasLine(out, line) {
			t.Errorf("output lacks the line %q:\n%s", line, out)
		}
	}
}

func TestDiffReportsAnInvalidObject(t *testing.T) {
	e := newDiffEnv(t)
	out, errOut, code := e.diff(t, "--dir", "testdata/diff/invalid", "-n", e.ns)
	if code != 2 {
		t.Fatalf("exit status %d, want 2 (error)\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if want := "tether: Deployment/" + e.ns + "/broken: dry-run failed: "; !strings.Contains(errOut, want) {
		t.Errorf("stderr %q does not name the object (%q)", errOut, want)
	}
	if diff := cmp.Diff([]string{"diff ConfigMap/" + e.ns + "/web-config (created)"}, headers(out)); diff != "" {
		t.Errorf("the valid object's diff is not printed (-want +got):\n%s", diff)
	}
}

func TestDiffOfASyncManifest(t *testing.T) {
	e := newDiffEnv(t)
	repo := gitserver.NewLocalRepo(t, "deploy")
	configMap := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {greeting: hello}\n"
	repo.Commit(t, map[string]string{"apps/web/configmap.yaml": configMap}, "web")
	syncFile := filepath.Join(t.TempDir(), "sync.yaml")
	writeFile(t, syncFile, fmt.Sprintf(`apiVersion: tether.dev/v1alpha1
kind: Sync
metadata: {name: web, namespace: tether-system}
spec:
  source: {url: %q, ref: {branch: main}, path: apps/web}
  destination: {namespace: %s}
`, repo.URL(), e.ns))

	t.Run("what the Sync would apply shows as created, with its ownership mark", func(t *testing.T) {
		out, errOut, code := e.diff(t, "-f", syncFile)
		if code != 1 {
			t.Fatalf("exit status %d, want 1 (differs)\nstderr: %s", code, errOut)
		}
		if diff := cmp.Diff([]string{"diff ConfigMap/" + e.ns + "/web-config (created)"}, headers(out)); diff != "" {
			t.Errorf("objects shown (-want +got):\n%s", diff)
		}
		if line := "+    tether.dev/owned-by: tether-system/web"; !hasLine(out, line) {
			t.Errorf("output lacks the line %q:\n%s", line, out)
		}
	})

	t.Run("after the agent's apply nothing differs", func(t *testing.T) {
		cm := decode(t, configMap)
		plan.MarkOwned([]*unstructured.Unstructured{cm}, &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: "tether-system", Name: "web"}})
		e.applyObjects(t, cm)
		out, errOut, code := e.diff(t, "-f", syncFile)
		if code != 0 || out != "" || errOut != "tether: no differences: the cluster holds what git declares\n" {
			t.Errorf("exit status %d, stdout %q, stderr %q; want 0, nothing on stdout and 'no differences' on stderr", code, out, errOut)
		}
	})
}

func TestDiffAsASyncsAccount(t *testing.T) {
	e := newDiffEnv(t)
	if err := e.c.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "deployer"}}); err != nil {
		t.Fatal(err)
	}
	user := "system:serviceaccount:" + e.ns + ":deployer"
	out, errOut, code := e.diff(t, "--dir", "testdata/diff/app", "-n", e.ns, "--as", user)
	if code != 2 {
		t.Fatalf("exit status %d, want 2: an account without rights may not read the objects\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if want := `User "` + user + `" cannot get resource "configmaps"`; !strings.Contains(errOut, want) {
		t.Errorf("stderr %q does not say %q", errOut, want)
	}
}

func TestDiffErrorsExitTwo(t *testing.T) {
	e := newDiffEnv(t)
	unreachable := unreachableKubeconfig(t)
	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no source", nil, "give exactly one of NAME, -f, --url and --dir"},
		{"two sources", []string{"--dir", "a", "--url", "b"}, "give exactly one of NAME, -f, --url and --dir"},
		{"two refs", []string{"--url", "file:///x", "--tag", "v1", "--commit", "abc"}, "at most one of --ref, --tag and --commit"},
		{"an unknown flag", []string{"--frobnicate"}, "unknown flag: --frobnicate"},
		{"a directory that does not exist", []string{"--dir", "testdata/diff/missing"}, "testdata/diff/missing: no such directory"},
		{"a repository that does not exist", []string{"--url", "file:///nonexistent/repo.git"}, "file:///nonexistent/repo.git"},
		{"a file that is not a Sync", []string{"-f", "testdata/diff/app/configmap.yaml"}, "want one tether.dev/v1alpha1 Sync"},
		{"an unreachable cluster", []string{"--dir", "testdata/diff/app", "-n", e.ns, "--kubeconfig", unreachable}, "reaching the cluster at https://127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := e.diff(t, tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit status %d, stderr %q; want 2 and a message with %q", code, errOut, tc.want)
			}
			if out != "" {
				t.Errorf("printed %q on stdout, want nothing", out)
			}
		})
	}
}

// diffEnv is a namespace of the shared control plane and a client to it.
type diffEnv struct {
	c          client.Client
	ns         string
	kubeconfig string
}

// syncClient installs the Sync CRD and returns a client that knows Tether's types,
// for tests that create Syncs beside the environment's objects.
func (e *diffEnv) syncClient(t *testing.T) client.Client {
	t.Helper()
	cfg := controlplane.Shared(t).Config()
	controlplane.InstallCRDs(t, cfg, "../../deploy/base/crd")
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newDiffEnv(t *testing.T) *diffEnv {
	t.Helper()
	cp := controlplane.Shared(t)
	c, err := client.New(cp.Config(), client.Options{})
	if err != nil {
		t.Fatalf("creating a client: %v", err)
	}
	return &diffEnv{c: c, ns: controlplane.NewNamespace(t, cp.Config()), kubeconfig: cp.KubeconfigPath()}
}

// diff runs `tether diff` as main would, and returns what it printed and its exit
// status.
func (e *diffEnv) diff(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(t.Context(), append([]string{"diff", "--kubeconfig", e.kubeconfig}, args...), &out, &errOut)
	code = exitCode(err, &errOut)
	return out.String(), errOut.String(), code
}

// apply applies what dir renders to into the namespace, as the agent would.
func (e *diffEnv) apply(t *testing.T, dir string) {
	t.Helper()
	objs, err := renderDir(t.Context(), dir, source.Helm{}, 0, nil)
	if err != nil {
		t.Fatalf("rendering %s: %v", dir, err)
	}
	e.applyObjects(t, objs...)
}

func (e *diffEnv) applyObjects(t *testing.T, objs ...*unstructured.Unstructured) {
	t.Helper()
	opts := apply.DefaultOptions()
	opts.DefaultNamespace = e.ns
	if _, err := apply.NewManager(e.c, apply.ManagerOptions{}).ApplyAll(t.Context(), objs, opts); err != nil {
		t.Fatalf("applying: %v", err)
	}
}

// edit changes a live object the way kubectl edit would: an update by another
// field manager.
func (e *diffEnv) edit(t *testing.T, kind, name string, change func(*unstructured.Unstructured)) {
	t.Helper()
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("v1")
	o.SetKind(kind)
	if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: name}, o); err != nil {
		t.Fatalf("reading %s %s: %v", kind, name, err)
	}
	change(o)
	if err := e.c.Update(t.Context(), o, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatalf("editing %s %s: %v", kind, name, err)
	}
}

// unreachableKubeconfig writes a kubeconfig for a cluster at a port nothing
// listens on.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.AuthInfos["nobody"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["nowhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: "nobody"}
	cfg.CurrentContext = "nowhere"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// headers returns the "diff Kind/namespace/name (action)" lines of the output.
func headers(out string) []string {
	var hs []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "diff ") {
			hs = append(hs, l)
		}
	}
	return hs
}

// changedLines returns the lines of the output that start with op, without the
// file headers.
func changedLines(out string, op byte) []string {
	var ls []string
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 0 && l[0] == op && !strings.HasPrefix(l, "--- ") && !strings.HasPrefix(l, "+++ ") {
			ls = append(ls, l)
		}
	}
	return ls
}

func hasLine(out, line string) bool {
	for _, l := range strings.Split(out, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// assertNoSecret fails if any value, or its base64, appears in out.
func assertNoSecret(t *testing.T, out string, values ...string) {
	t.Helper()
	for _, v := range values {
		for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v))} {
			if strings.Contains(out, form) {
				t.Errorf("output contains the Secret value %q:\n%s", form, out)
			}
		}
	}
}

func decode(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	objs, err := source.DecodeManifests([]byte(manifest))
	if err != nil || len(objs) != 1 {
		t.Fatalf("decoding %q: %d objects, error %v; want one object", manifest, len(objs), err)
	}
	return objs[0]
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// sides rebuilds both sides of an edit script, and counts the kept lines.
func TestObjectDiffOfARecreate(t *testing.T) {
	// The dry-run of an immutable change is refused, so there is no desired object.
	live, err := apply.NewObject(decode(t, "apiVersion: batch/v1\nkind: Job\nmetadata: {name: migrate}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := apply.Change{Action: apply.ActionConfigured, Live: live, Diff: []string{"(immutable field: delete and recreate)"}}
	got, err := plan.ObjectDiff(c)
	if want := "# (immutable field: delete and recreate)\n"; got != want || err != nil {
		t.Errorf("plan.ObjectDiff = %q, %v; want %q", got, err, want)
	}
}

// tether diff renders a Sync's chart as the agent does: its release name,
// and its valuesFrom read (as the user) from the Sync's namespace.
func TestDiffOfASyncOfAChart(t *testing.T) {
	e := newDiffEnv(t)
	repo := gitserver.NewLocalRepo(t, "charts")
	repo.Commit(t, map[string]string{
		"web/Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"web/values.yaml":       "size: small\n",
		"web/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {size: {{ .Values.size | quote }}}\n",
	}, "a chart")
	if err := e.c.Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web-values"},
		Data:       map[string]string{"values.yaml": "size: large\n"},
	}); err != nil {
		t.Fatal(err)
	}
	syncFile := filepath.Join(t.TempDir(), "sync.yaml")
	writeFile(t, syncFile, fmt.Sprintf(`apiVersion: tether.dev/v1alpha1
kind: Sync
metadata: {name: web, namespace: %[2]s}
spec:
  source: {url: %[1]q, ref: {branch: main}, path: web}
  destination: {namespace: %[2]s}
  helm:
    releaseName: shop
    valuesFrom: [{kind: ConfigMap, name: web-values, key: values.yaml}]
`, repo.URL(), e.ns))
	out, errOut, code := e.diff(t, "-f", syncFile)
	if code != 1 {
		t.Fatalf("exit status %d, want 1 (differs)\nstderr: %s", code, errOut)
	}
	if diff := cmp.Diff([]string{"diff ConfigMap/" + e.ns + "/shop (created)"}, headers(out)); diff != "" {
		t.Errorf("objects shown (-want +got):\n%s", diff)
	}
	if line := "+  size: large"; !hasLine(out, line) {
		t.Errorf("output lacks the line %q:\n%s", line, out)
	}
}

// tether diff -f renders a Sync of a packaged chart from its chart repository
// as the agent does: the newest version in range, with the Sync's values.
func TestDiffOfASyncOfAPackagedChart(t *testing.T) {
	repo := chartrepo.Start(t, chartrepo.Options{})
	webapp := chartrepo.Chart(t, "webapp")
	repo.Publish(t, webapp, "1.0.0")
	repo.Publish(t, webapp, "1.4.2")
	diffsThePackagedChart(t, repo.URL)
}

func TestDiffOfASyncOfAChartFromAnOCIRegistry(t *testing.T) {
	reg := ociregistry.Start(t)
	webapp := chartrepo.Chart(t, "webapp")
	for _, v := range []string{"1.0.0", "1.4.2"} {
		reg.Push(t, "webapp", v, chartrepo.Package(t, webapp, v))
	}
	diffsThePackagedChart(t, reg.Repository)
}

// diffsThePackagedChart checks that `tether diff -f` of a Sync of webapp 1.x
// from repository (which has 1.0.0 and 1.4.2) shows 1.4.2's ConfigMap with
// the Sync's values as created.
func diffsThePackagedChart(t *testing.T, repository string) {
	e := newDiffEnv(t)
	syncFile := filepath.Join(t.TempDir(), "sync.yaml")
	writeFile(t, syncFile, fmt.Sprintf(`apiVersion: tether.dev/v1alpha1
kind: Sync
metadata: {name: web, namespace: %[2]s}
spec:
  source: {chart: {repository: %[1]q, name: webapp, version: "1.x"}}
  destination: {namespace: %[2]s}
  helm: {values: {greeting: hola}}
`, repository, e.ns))
	out, errOut, code := e.diff(t, "-f", syncFile)
	if code != 1 {
		t.Fatalf("exit status %d, want 1 (differs)\nstderr: %s", code, errOut)
	}
	if diff := cmp.Diff([]string{"diff ConfigMap/" + e.ns + "/web-config (created)"}, headers(out)); diff != "" {
		t.Errorf("objects shown (-want +got):\n%s", diff)
	}
	for _, line := range []string{`+  greeting: hola`, `+  chartVersion: 1.4.2`} {
		if !hasLine(out, line) {
			t.Errorf("output lacks the line %q:\n%s", line, out)
		}
	}
}

func TestDiffOfASyncOfAnotherClusterComparesWithThatCluster(t *testing.T) {
	e := newDiffEnv(t)
	remote, err := controlplane.Start(t.Context(), controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = remote.Stop() })
	kubeconfig, err := os.ReadFile(remote.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	// The kubeconfig the Sync names, in a Secret of its namespace on the hub.
	if err := e.c.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "prod"}, Data: map[string][]byte{"value": kubeconfig}}); err != nil {
		t.Fatal(err)
	}
	rc, err := client.New(remote.Config(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	repo := gitserver.NewLocalRepo(t, "deploy")
	configMap := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {greeting: hello}\n"
	repo.Commit(t, map[string]string{"apps/web/configmap.yaml": configMap}, "web")
	syncFile := filepath.Join(t.TempDir(), "sync.yaml")
	writeFile(t, syncFile, fmt.Sprintf(`apiVersion: tether.dev/v1alpha1
kind: Sync
metadata: {name: web, namespace: %s}
spec:
  source: {url: %q, ref: {branch: main}, path: apps/web}
  destination: {namespace: web, kubeConfig: {secretRef: {name: prod}}}
`, e.ns, repo.URL()))

	// The remote holds what git declares, as the agent applied it; the hub has
	// no namespace web at all.
	cm := decode(t, configMap)
	cm.SetNamespace("web")
	plan.MarkOwned([]*unstructured.Unstructured{cm}, &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web"}})
	if err := rc.Patch(t.Context(), cm, client.Apply, client.FieldOwner(apply.DefaultOptions().FieldManager)); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := e.diff(t, "-f", syncFile); code != 0 {
		t.Fatalf("exit status %d, want 0: the remote cluster holds what git declares\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	cm.Object["data"] = map[string]any{"greeting": "changed by hand"}
	cm.SetManagedFields(nil)
	cm.SetResourceVersion("")
	if err := rc.Patch(t.Context(), cm, client.Apply, client.FieldOwner("kubectl"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := e.diff(t, "-f", syncFile)
	if code != 1 {
		t.Fatalf("exit status %d, want 1: the remote cluster differs\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if diff := cmp.Diff([]string{"diff ConfigMap/web/web-config (configured)"}, headers(out)); diff != "" {
		t.Errorf("objects shown (-want +got):\n%s\n%s", diff, out)
	}
}
