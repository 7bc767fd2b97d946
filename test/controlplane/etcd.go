package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
)

// startEtcd starts a single-member etcd on two free loopback ports, with a fresh data
// directory and without fsync: the data lives as long as the tests, and fsync is what
// makes etcd slow on CI disks.
func (c *ControlPlane) startEtcd(ctx context.Context) error {
	clientPort, err := freePort()
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	peerPort, err := freePort()
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	c.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	p, err := c.start("etcd", c.bins.etcd, []string{
		"--name=tether-test",
		"--data-dir=" + filepath.Join(c.dir, "etcd"),
		"--listen-client-urls=" + c.etcdURL,
		"--advertise-client-urls=" + c.etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=tether-test=" + peerURL,
		"--unsafe-no-fsync",
		"--log-level=warn",
	})
	if err != nil {
		return err
	}
	return c.waitReady(ctx, p, "etcd health", c.etcdHealthy)
}

// etcdHealthy asks etcd's /health endpoint, which answers {"health":"true"} once the
// member has a leader.
func (c *ControlPlane) etcdHealthy(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.etcdURL+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var health struct {
		Health string `json:"health"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&health); err != nil {
		return fmt.Errorf("etcd /health: %s: %w", resp.Status, err)
	}
	if health.Health != "true" {
		return fmt.Errorf("etcd /health: %s, health %q", resp.Status, health.Health)
	}
	return nil
}
