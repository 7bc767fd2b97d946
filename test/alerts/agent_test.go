package alerts

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/test/agentbin"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// waitTimeout bounds every wait for something to happen: a guard against hangs, not
// a performance assertion. On a loaded 2-core machine a step takes seconds.
const waitTimeout = 2 * time.Minute

// newClient returns a client for the shared control plane that knows Syncs, with
// the CRD installed.
func newClient(t *testing.T) client.Client {
	return agentbin.Client(t)
}

// replica is one `tether controller` process of an agent with leader election.
type replica struct {
	name        string
	metricsAddr string
	cmd         *exec.Cmd
	log         *harness.Buffer
	done        chan error
	// killed is set by kill: the process is gone and needs no stopping.
	killed bool
}

// newReplica reserves the addresses of a replica, so that Prometheus can be told
// its target before it starts.
func newReplica(t *testing.T, name string) *replica {
	return &replica{name: name, metricsAddr: harness.FreeAddr(t), log: &harness.Buffer{}, done: make(chan error, 1)}
}

// start runs the replica against the shared control plane until the test ends (or
// kill), with its lease in leaseNamespace, and prints its log if the test failed.
func (r *replica) start(t *testing.T, leaseNamespace string) {
	t.Helper()
	r.cmd = exec.Command(tetherBinary, "controller",
		"--kubeconfig", controlplane.Shared(t).KubeconfigPath(),
		"--metrics-bind-address", r.metricsAddr,
		"--health-probe-bind-address", harness.FreeAddr(t),
		"--webhook-bind-address", "0",
		"--cache-dir", t.TempDir(),
		"--leader-elect",
		"--leader-election-namespace", leaseNamespace,
		"--leader-election-lease-duration", leaseDuration.String(),
		"--leader-election-renew-deadline", renewDeadline.String(),
		"--leader-election-retry-period", retryPeriod.String(),
		// The tests' Syncs poll every two seconds.
		"--min-interval", "1s",
	)
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", r.name, err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	t.Cleanup(func() {
		if !r.killed {
			_ = r.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-r.done:
				t.Logf("%s stopped: %v", r.name, err)
			case <-time.After(15 * time.Second):
				_ = r.cmd.Process.Kill()
				t.Errorf("%s did not stop within 15s of SIGTERM: %v", r.name, <-r.done)
			}
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", r.name, r.log.String())
		}
	})
}

// kill ends the replica with SIGKILL, as a crash or an OOM kill would: it does not
// release the lease.
func (r *replica) kill(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatalf("killing %s: %v", r.name, err)
	}
	r.killed = true
	select {
	case err := <-r.done:
		t.Logf("%s killed: %v", r.name, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not exit within 30s of SIGKILL", r.name)
	}
}
