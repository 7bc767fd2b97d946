package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"tether.dev/tether/test/harness"
)

// Options configures a control plane. The zero value is etcd and kube-apiserver in a
// fresh temporary directory, which is what most tests need.
type Options struct {
	// Workloads also runs kube-controller-manager, kube-scheduler and kwok with one fake
	// node, so Deployments, StatefulSets and Jobs roll out and their pods become ready.
	// It costs about two more seconds of start-up and three more processes.
	Workloads bool

	// Dir is where data, certificates, kubeconfigs and component logs go. It must be
	// empty or not exist yet, and it is kept after Stop. Empty means a fresh temporary
	// directory that Stop removes.
	Dir string

	// Output, if set, also receives every component's log, each line prefixed with the
	// component's name ("[kube-apiserver] ..."). The logs always go to files in Dir.
	Output io.Writer
}

// ControlPlane is a running etcd and kube-apiserver (and, with Options.Workloads, the
// components that run workloads) on 127.0.0.1. Its methods are safe for concurrent
// use, except Stop, which ends it.
type ControlPlane struct {
	dir     string
	tempDir bool // dir was made by Start, so Stop removes it
	bins    binaries
	pki     *pki
	output  *lineWriter

	etcdURL    string
	host       string // https://127.0.0.1:<port> of the apiserver
	kubeconfig string // the admin kubeconfig
	config     *rest.Config

	procs []*process // in start order; stopped in reverse
	// paused is the kube-apiserver Pause stopped, which Resume starts again.
	paused *process
}

// clusterName names the cluster and context in the kubeconfig files written.
const clusterName = "tether-test"

// Start starts a control plane and returns once it serves requests: the apiserver's
// /readyz passes and, with Options.Workloads, the fake node is Ready and the
// controllers run. ctx bounds the start only; the components run until Stop. If Start
// fails it stops whatever it started, and its error quotes the end of the log of the
// component that failed.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	bins, err := findBinaries(opts.Workloads)
	if err != nil {
		return nil, err
	}
	c := &ControlPlane{bins: bins, dir: opts.Dir}
	if opts.Output != nil {
		c.output = &lineWriter{out: opts.Output}
	}
	if err := c.makeDir(); err != nil {
		return nil, err
	}
	if err := c.startComponents(ctx, opts.Workloads); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

// startComponents makes the certificates and starts the components in dependency
// order, each ready before the next starts.
func (c *ControlPlane) startComponents(ctx context.Context, workloads bool) error {
	var err error
	if c.pki, err = newPKI(filepath.Join(c.dir, "pki"), workloads); err != nil {
		return fmt.Errorf("control plane certificates: %w", err)
	}
	if err := c.startEtcd(ctx); err != nil {
		return err
	}
	if err := c.startAPIServer(ctx); err != nil {
		return err
	}
	if workloads {
		return c.startWorkloads(ctx)
	}
	return nil
}

// makeDir creates the data directory, or checks that the one given is empty: a
// leftover etcd data directory would bring back objects and certificates of an
// earlier run.
func (c *ControlPlane) makeDir() error {
	if c.dir == "" {
		dir, err := os.MkdirTemp("", "tether-controlplane-")
		if err != nil {
			return fmt.Errorf("control plane directory: %w", err)
		}
		c.dir, c.tempDir = dir, true
		return nil
	}
	dir, err := filepath.Abs(c.dir)
	if err != nil {
		return fmt.Errorf("control plane directory %s: %w", c.dir, err)
	}
	c.dir = dir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("control plane directory %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("control plane directory %s: %w", dir, err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("control plane directory %s is not empty; remove it or choose another", dir)
	}
	return nil
}

// Config returns a copy of the admin client configuration: a client certificate in
// group system:masters, verified TLS, and client-side rate limits raised (100 QPS,
// burst 200) so a test that creates many objects is not throttled by its own client.
// Each call returns a new copy, so callers may change it.
func (c *ControlPlane) Config() *rest.Config {
	return rest.CopyConfig(c.config)
}

// KubeconfigPath returns the path of the admin kubeconfig in Dir, self-contained (the
// certificates are inline), for kubectl and for `tether controller --kubeconfig`.
func (c *ControlPlane) KubeconfigPath() string { return c.kubeconfig }

// Host returns the apiserver's URL, https://127.0.0.1:<port>.
func (c *ControlPlane) Host() string { return c.host }

// Dir returns the directory holding data, certificates, kubeconfigs and component
// logs (<component>.log).
func (c *ControlPlane) Dir() string { return c.dir }

// Stop stops every component, newest first (SIGTERM, then SIGKILL after a grace
// period), and removes Dir if Start made it. It returns an error if a component had
// exited on its own before Stop, i.e. crashed while the tests ran. Calling Stop again
// does nothing.
func (c *ControlPlane) Stop() error {
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		if err := c.procs[i].stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.tempDir {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("removing control plane directory: %w", err))
		}
	}
	return errors.Join(errs...)
}

// start starts one component with its log in Dir and records it for Stop.
func (c *ControlPlane) start(name, path string, args []string) (*process, error) {
	p, err := startProcess(name, path, args, c.dir, c.output)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// pollInterval paces readiness checks: short, because every start of every test
// package waits on them.
const pollInterval = 100 * time.Millisecond

// waitReady polls check until it passes. It fails early, with the component's log
// tail, if any component started so far exits, and on ctx's end with the log tail of
// the component p it waits for and check's last error.
func (c *ControlPlane) waitReady(ctx context.Context, p *process, what string, check func(context.Context) error) error {
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		for _, q := range c.procs {
			if err := q.exited(); err != nil {
				return fmt.Errorf("waiting for %s: %w", what, err)
			}
		}
		attemptCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		last := check(attemptCtx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last check: %w)\n%s", what, ctx.Err(), last, p.tail())
		case <-ticker.C:
		}
	}
}

// freePort returns a TCP port on 127.0.0.1 for a component to bind: see
// harness.FreePort for why it is not one the kernel picks.
func freePort() (int, error) {
	return harness.FreePort()
}

// writeKubeconfig writes a self-contained kubeconfig for user, authenticated by
// client, to Dir/name.
func (c *ControlPlane) writeKubeconfig(name, user string, client *keyPair) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[clusterName] = &clientcmdapi.Cluster{Server: c.host, CertificateAuthorityData: c.pki.ca.certPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: client.certPEM, ClientKeyData: client.keyPEM}
	cfg.Contexts[clusterName] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: user}
	cfg.CurrentContext = clusterName
	path := filepath.Join(c.dir, name)
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("kubeconfig %s: %w", name, err)
	}
	return path, nil
}

// Pids returns the process id of each running component, by name ("etcd",
// "kube-apiserver", ...): what a benchmark reads to say how much CPU each spent.
// It must not run concurrently with Restart or Stop.
func (c *ControlPlane) Pids() map[string]int {
	out := map[string]int{}
	for _, p := range c.procs {
		if p.cmd.Process != nil {
			out[p.name] = p.cmd.Process.Pid
		}
	}
	return out
}
