package e2e

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/test/agentbin"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// waitTimeout bounds every wait for the agent to do something. It is a guard against
// hangs, not a performance assertion: on a loaded 2-core machine a step takes seconds.
const waitTimeout = 90 * time.Second

// newClient returns a client for the shared control plane that knows Syncs, with the
// CRD installed.
func newClient(t testing.TB) client.Client {
	return agentbin.Client(t)
}

// agent is a running `tether controller` process.
type agent struct {
	cmd *exec.Cmd
	// log is the agent's output so far; read it with String, which locks.
	log         *harness.Buffer
	metricsAddr string
	// webhookAddr is where the push webhook receiver listens; its generic and
	// GitHub receivers take webhookSecret.
	webhookAddr string
	done        chan error
}

// webhookSecret is the secret of the e2e agent's generic and GitHub receivers.
var webhookSecret = []byte("e2e-webhook-secret")

// startAgent runs the tether binary against the shared control plane until the test
// ends, and prints its log if the test failed.
func startAgent(t *testing.T) *agent {
	t.Helper()
	return startAgentWith(t, controlplane.Shared(t).KubeconfigPath())
}

// startAgentWith is startAgent talking to the API server through kubeconfig, with
// extra flags.
func startAgentWith(t *testing.T, kubeconfig string, flags ...string) *agent {
	t.Helper()
	return launchAgent(t, kubeconfig, append([]string{
		// The tests' Syncs poll every two seconds.
		"--min-interval", "1s",
		"--zap-log-level", "debug",
	}, flags...)...)
}

// launchAgent runs the tether binary with flags and those it needs to run beside
// other agents on one machine (its addresses, cache and webhook secrets), and no
// other: what users run, at its default flags.
func launchAgent(t testing.TB, kubeconfig string, flags ...string) *agent {
	t.Helper()
	a := &agent{log: &harness.Buffer{}, metricsAddr: harness.FreeAddr(t), webhookAddr: harness.FreeAddr(t), done: make(chan error, 1)}
	secrets := t.TempDir()
	for _, receiver := range []string{"generic", "github"} {
		if err := os.WriteFile(filepath.Join(secrets, receiver), append(webhookSecret, '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a.cmd = exec.Command(tetherBinary, append([]string{"controller",
		"--kubeconfig", kubeconfig,
		"--metrics-bind-address", a.metricsAddr,
		"--health-probe-bind-address", harness.FreeAddr(t),
		"--webhook-bind-address", a.webhookAddr,
		"--webhook-secrets-dir", secrets,
		"--cache-dir", t.TempDir(),
	}, flags...)...)
	out := a.log
	a.cmd.Stdout, a.cmd.Stderr = out, out
	if err := a.cmd.Start(); err != nil {
		t.Fatalf("starting tether: %v", err)
	}
	go func() { a.done <- a.cmd.Wait() }()
	t.Cleanup(func() {
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-a.done:
			t.Logf("tether stopped: %v", err)
		case <-time.After(15 * time.Second):
			_ = a.cmd.Process.Kill()
			t.Errorf("tether did not stop within 15s of SIGTERM: %v", <-a.done)
		}
		if t.Failed() {
			t.Logf("tether log:\n%s", out.String())
		}
	})
	return a
}

// metrics returns the agent's /metrics page.
func (a *agent) metrics(t testing.TB) string {
	t.Helper()
	page, err := a.scrape()
	if err != nil {
		t.Fatalf("scraping metrics: %v", err)
	}
	return page
}

// scrape reads the agent's /metrics page.
func (a *agent) scrape() (string, error) {
	resp, err := http.Get("http://" + a.metricsAddr + "/metrics") //nolint:noctx // a test's one-shot scrape
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// stop sends sig to the agent and waits until it has exited.
func (a *agent) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := a.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signalling tether: %v", err)
	}
	select {
	case err := <-a.done:
		a.done <- err // for the cleanup, which signals again and waits
		t.Logf("tether stopped by %s: %v", sig, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("tether did not stop within 30s of %s", sig)
	}
}

// running fails the test if the agent has exited.
func (a *agent) running(t *testing.T) {
	t.Helper()
	select {
	case err := <-a.done:
		a.done <- err
		t.Fatalf("tether exited: %v", err)
	default:
	}
}

// kubectl runs the control plane's kubectl against the shared control plane.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	cp := controlplane.Shared(t)
	bin, err := controlplane.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), filepath.Join(bin, "kubectl"), append([]string{"--kubeconfig", cp.KubeconfigPath()}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
