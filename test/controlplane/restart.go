package controlplane

import (
	"context"
	"fmt"
	"slices"
)

// Restart stops kube-apiserver and etcd and starts them again on the same ports, with
// the same data and certificates, as a control-plane upgrade or a crash of its host
// does: clients see connections refused, then their watches end and must resume.
// Other components keep running and reconnect. It returns once the apiserver is
// ready again. Restart must not run concurrently with itself or with Stop.
func (c *ControlPlane) Restart(ctx context.Context) error {
	old := map[string]*process{}
	for _, p := range c.procs {
		if p.name == "etcd" || p.name == "kube-apiserver" {
			old[p.name] = p
		}
	}
	if old["etcd"] == nil || old["kube-apiserver"] == nil {
		return fmt.Errorf("restart: etcd and kube-apiserver are not both running")
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if err := old[name].stop(); err != nil {
			return fmt.Errorf("restart: %w", err)
		}
	}
	c.procs = slices.DeleteFunc(c.procs, func(p *process) bool { return old[p.name] == p })

	etcd, err := c.start("etcd", old["etcd"].cmd.Path, old["etcd"].cmd.Args[1:])
	if err != nil {
		return err
	}
	if err := c.waitReady(ctx, etcd, "etcd health after a restart", c.etcdHealthy); err != nil {
		return err
	}
	api, err := c.start("kube-apiserver", old["kube-apiserver"].cmd.Path, old["kube-apiserver"].cmd.Args[1:])
	if err != nil {
		return err
	}
	return c.waitAPIServer(ctx, api, "kube-apiserver /readyz after a restart")
}

// Pause kills kube-apiserver (SIGKILL: no graceful shutdown), as a cluster that
// went down does for its clients: connections refused until Resume starts it
// again on the same port. etcd and
// the other components keep running. Pause and Resume must not run concurrently
// with each other, Restart or Stop.
func (c *ControlPlane) Pause() error {
	i := slices.IndexFunc(c.procs, func(p *process) bool { return p.name == "kube-apiserver" })
	if i < 0 {
		return fmt.Errorf("pause: kube-apiserver is not running")
	}
	p := c.procs[i]
	if err := p.kill(); err != nil {
		return fmt.Errorf("pause: %w", err)
	}
	c.procs = slices.Delete(c.procs, i, i+1)
	c.paused = p
	return nil
}

// Resume starts the kube-apiserver Pause stopped, with the same arguments, and
// returns once it is ready.
func (c *ControlPlane) Resume(ctx context.Context) error {
	old := c.paused
	if old == nil {
		return fmt.Errorf("resume: the control plane is not paused")
	}
	api, err := c.start("kube-apiserver", old.cmd.Path, old.cmd.Args[1:])
	if err != nil {
		return err
	}
	c.paused = nil
	return c.waitAPIServer(ctx, api, "kube-apiserver /readyz after a pause")
}
