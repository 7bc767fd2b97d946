package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// The command line against a running agent: every verb runs as the real binary
// against the shared control plane, as a person or a pipeline would run it.

// cliResult is what one run of the tether binary printed, and its exit status.
type cliResult struct {
	stdout, stderr string
	code           int
}

func (r cliResult) String() string {
	return fmt.Sprintf("exit status %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// tether runs the tether binary with args against the shared control plane,
// which $KUBECONFIG names, as a user's shell would.
func tether(t *testing.T, args ...string) cliResult {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), tetherBinary, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+controlplane.Shared(t).KubeconfigPath())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running tether %s: %v", strings.Join(args, " "), err)
	}
	return cliResult{stdout: out.String(), stderr: errOut.String(), code: cmd.ProcessState.ExitCode()}
}

const cliConfig = `apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
data:
  greeting: %s
`

func TestCLIFollowsACommitIntoTheCluster(t *testing.T) {
	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{})
	repo := git.CreateRepo(t, "deploy")
	first := repo.Commit(t, map[string]string{"app/config.yaml": fmt.Sprintf(cliConfig, "web-config", "hello")}, "add web")
	startAgent(t)
	// An hour between polls: within the test, only `tether reconcile` makes the
	// agent look at git again.
	sync := gitSync(ns, "web", repo.URL(), "app", time.Hour)
	createSync(t, c, sync)
	waitRevision(t, c, sync, first)

	t.Run("get lists the Sync with its short revision, sync, health and readiness", func(t *testing.T) {
		r := tether(t, "get", "-n", ns)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if r.code != 0 || len(lines) != 2 {
			t.Fatalf("want a header and one row:\n%s", r)
		}
		wantHeader := []string{"NAME", "REVISION", "SYNC", "HEALTH", "READY", "SUSPENDED", "PINNED", "RUN", "AGE", "MESSAGE"}
		if got := strings.Fields(lines[0]); strings.Join(got, " ") != strings.Join(wantHeader, " ") {
			t.Errorf("header %v, want %v", got, wantHeader)
		}
		row := strings.Fields(lines[1])
		want := []string{"web", "main@" + first[:7], "Synced", "Healthy", "True", "false"}
		if len(row) < len(want) || strings.Join(row[:len(want)], " ") != strings.Join(want, " ") {
			t.Errorf("row %v, want it to start with %v", row, want)
		}
		r = tether(t, "get", "web", "-n", ns, "-o", "yaml")
		got := &v1alpha1.Sync{}
		if err := yaml.Unmarshal([]byte(r.stdout), got); err != nil || got.Status.LastAppliedRevision != "main@sha1:"+first {
			t.Errorf("-o yaml does not parse back to the Sync at %s (%v):\n%s", first, err, r)
		}
	})

	t.Run("the shell completes Sync names", func(t *testing.T) {
		r := tether(t, "__complete", "reconcile", "-n", ns, "")
		if r.code != 0 || !strings.HasPrefix(r.stdout, "web\n") {
			t.Errorf("want the Sync's name first:\n%s", r)
		}
	})

	second := repo.Commit(t, map[string]string{"app/config.yaml": fmt.Sprintf(cliConfig, "web-config", "bonjour")}, "greet in French")

	t.Run("reconcile --wait brings a push in at once and prints each step", func(t *testing.T) {
		r := tether(t, "reconcile", "web", "-n", ns, "--wait", "--timeout", "2m")
		if r.code != 0 {
			t.Fatalf("want exit 0:\n%s", r)
		}
		for _, want := range []string{"► requested a reconcile of Sync " + ns + "/web", "✔ Applied revision main@sha1:" + second} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("output lacks %q:\n%s", want, r)
			}
		}
		s := &v1alpha1.Sync{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(sync), s); err != nil {
			t.Fatal(err)
		}
		if s.Status.LastHandledReconcileAt == "" || s.Status.LastHandledReconcileAt != s.Annotations[v1alpha1.ReconcileRequestedAnnotation] {
			t.Errorf("status.lastHandledReconcileAt %q, want the annotation's %q", s.Status.LastHandledReconcileAt, s.Annotations[v1alpha1.ReconcileRequestedAnnotation])
		}
		cm := &corev1.ConfigMap{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web-config"}, cm); err != nil || cm.Data["greeting"] != "bonjour" {
			t.Errorf("ConfigMap greeting %q (%v), want the pushed bonjour", cm.Data["greeting"], err)
		}
	})

	t.Run("wait --revision --healthy answers at once for a commit that has landed", func(t *testing.T) {
		r := tether(t, "wait", "web", "-n", ns, "--revision", second[:10], "--healthy", "--timeout", "1m")
		if r.code != 0 || !strings.Contains(r.stdout, "✔ applied main@sha1:"+second+" and healthy") {
			t.Errorf("want exit 0 and the revision applied and healthy:\n%s", r)
		}
	})

	t.Run("wait gives up at its timeout on a commit that never comes, with exit 3", func(t *testing.T) {
		r := tether(t, "wait", "web", "-n", ns, "--revision", "0123456789abcdef", "--timeout", "2s")
		if r.code != 3 || !strings.Contains(r.stderr, "timed out after 2s") || !strings.Contains(r.stderr, "waiting for revision 0123456789abcdef") {
			t.Errorf("want exit 3 and what it waited for:\n%s", r)
		}
	})

	t.Run("tree shows the inventory by namespace and kind with sync and health", func(t *testing.T) {
		r := tether(t, "tree", "web", "-n", ns)
		want := "Sync/" + ns + "/web  main@" + second[:7] + "  Synced  Healthy\n" +
			"└── " + ns + "\n" +
			"    └── ConfigMap\n" +
			"        └── web-config  Synced  Healthy\n"
		if r.code != 0 || r.stdout != want {
			t.Errorf("want exit 0 and\n%s\ngot %s", want, r)
		}
		if strings.Contains(r.stdout, "\x1b[") {
			t.Errorf("colours written to a pipe:\n%q", r.stdout)
		}
	})

	t.Run("events shows what the agent did", func(t *testing.T) {
		r := tether(t, "events", "web", "-n", ns)
		if r.code != 0 || !strings.Contains(r.stdout, "Applied revision main@sha1:"+second) || !strings.Contains(r.stdout, "Sync/web") {
			t.Errorf("want exit 0 and the Applied Event of the second commit:\n%s", r)
		}
	})

	broken := repo.Commit(t, map[string]string{"app/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config\n"}, "break the YAML")

	t.Run("reconcile --wait on a broken commit exits 1 with the Stalled message", func(t *testing.T) {
		r := tether(t, "reconcile", "web", "-n", ns, "--wait", "--timeout", "2m")
		if r.code != 1 {
			t.Fatalf("want exit 1:\n%s", r)
		}
		for _, want := range []string{"Sync " + ns + "/web: Stalled (" + v1alpha1.ReasonRenderFailed + ")", "config.yaml"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, r)
			}
		}
	})

	t.Run("wait --revision on the broken commit exits 1 with the message", func(t *testing.T) {
		r := tether(t, "wait", "web", "-n", ns, "--revision", broken, "--timeout", "1m")
		if r.code != 1 || !strings.Contains(r.stderr, "Stalled ("+v1alpha1.ReasonRenderFailed+")") {
			t.Errorf("want exit 1 and the Stalled message:\n%s", r)
		}
	})

	t.Run("suspend stops reconciles and resume restarts them", func(t *testing.T) {
		if r := tether(t, "suspend", "web", "-n", ns); r.code != 0 || !strings.Contains(r.stdout, "► Sync "+ns+"/web suspended") {
			t.Fatalf("suspend: want exit 0:\n%s", r)
		}
		if r := tether(t, "get", "web", "-n", ns); !strings.Contains(r.stdout, " true ") {
			t.Errorf("get does not show the Sync suspended:\n%s", r)
		}
		if r := tether(t, "reconcile", "web", "-n", ns); r.code != 1 || !strings.Contains(r.stderr, "is suspended: resume it first") {
			t.Errorf("reconcile of a suspended Sync: want exit 1 and why:\n%s", r)
		}
		fixed := repo.Commit(t, map[string]string{"app/config.yaml": fmt.Sprintf(cliConfig, "web-config", "hallo")}, "fix the YAML")
		if r := tether(t, "resume", "web", "-n", ns); r.code != 0 || !strings.Contains(r.stdout, "► Sync "+ns+"/web resumed") {
			t.Fatalf("resume: want exit 0:\n%s", r)
		}
		// Resuming requests a reconcile, so the agent looks at git at once and finds the fix.
		if r := tether(t, "wait", "web", "-n", ns, "--revision", fixed, "--timeout", "2m"); r.code != 0 {
			t.Errorf("wait for the fix after resume: want exit 0:\n%s", r)
		}
	})

	// Gone while the agent runs, so that no later test's agent finds it.
	harness.Must(t, c.Delete(t.Context(), sync))
	waitGone(t, c, sync)
}

func TestDiffOfASyncTheAgentConverged(t *testing.T) {
	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{})
	repo := git.CreateRepo(t, "deploy")
	first := repo.Commit(t, map[string]string{
		"app/config.yaml": fmt.Sprintf(cliConfig, "web-config", "hello"),
		"app/extra.yaml":  fmt.Sprintf(cliConfig, "web-extra", "hello"),
	}, "add web")
	startAgent(t)
	sync := gitSync(ns, "web", repo.URL(), "app", 2*time.Second)
	// The greeting belongs to someone else: the agent neither compares nor applies it.
	sync.Spec.IgnoreDifferences = []v1alpha1.IgnoreRule{{Kind: "ConfigMap", Name: "web-config", JSONPointers: []string{"/data/greeting"}}}
	createSync(t, c, sync)
	waitRevision(t, c, sync, first)
	manifest := filepath.Join(t.TempDir(), "sync.yaml")
	sync.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Sync"}
	data, err := yaml.Marshal(&v1alpha1.Sync{TypeMeta: sync.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: sync.Name, Namespace: ns}, Spec: sync.Spec})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest, data, 0o600); err != nil {
		t.Fatal(err)
	}

	cm := &corev1.ConfigMap{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web-config"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["greeting"] = "changed by its owner"
	if err := c.Update(t.Context(), cm, client.FieldOwner("the-owner")); err != nil {
		t.Fatal(err)
	}

	t.Run("a field an ignore rule leaves to another owner is no difference", func(t *testing.T) {
		for _, args := range [][]string{{"diff", "-f", manifest}, {"diff", "web", "-n", ns}} {
			if r := tether(t, args...); r.code != 0 || r.stdout != "" {
				t.Errorf("tether %s: want exit 0 and nothing printed:\n%s", strings.Join(args, " "), r)
			}
		}
	})

	if r := tether(t, "suspend", "web", "-n", ns); r.code != 0 {
		t.Fatalf("suspend: %s", r)
	}
	second := repo.Commit(t, map[string]string{"app/extra.yaml": ""}, "remove web-extra")

	t.Run("an object removed from git shows as pruned, with the reason", func(t *testing.T) {
		r := tether(t, "diff", "-f", manifest)
		want := "diff ConfigMap/" + ns + "/web-extra (pruned)\n# not in git any more: the agent would delete it\n"
		if r.code != 1 || r.stdout != want {
			t.Errorf("want exit 1 and\n%s\ngot %s", want, r)
		}
	})

	t.Run("once the agent has pruned it, nothing differs", func(t *testing.T) {
		if r := tether(t, "resume", "web", "-n", ns); r.code != 0 {
			t.Fatalf("resume: %s", r)
		}
		if r := tether(t, "wait", "web", "-n", ns, "--revision", second, "--timeout", "2m"); r.code != 0 {
			t.Fatalf("wait: %s", r)
		}
		err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web-extra"}, &corev1.ConfigMap{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("web-extra: %v, want it pruned", err)
		}
		if r := tether(t, "diff", "-f", manifest); r.code != 0 || r.stdout != "" {
			t.Errorf("want exit 0 and nothing printed:\n%s", r)
		}
	})

	harness.Must(t, c.Delete(t.Context(), sync))
	waitGone(t, c, sync)
}
