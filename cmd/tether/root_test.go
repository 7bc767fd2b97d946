package main

import (
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"tether.dev/tether/source"
)

// TestKubernetesClientsHaveTransportsOfTheirOwn: main refuses every request made
// through the process's default HTTP transport (kustomize's loader would use it),
// so every Kubernetes client must build its own, even for an API server without
// TLS, for which client-go would fall back to the default one.
func TestKubernetesClientsHaveTransportsOfTheirOwn(t *testing.T) {
	var requests atomic.Int64
	apiServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major": "1", "minor": "34", "gitVersion": "v1.34.0"}`))
	}))
	t.Cleanup(apiServer.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: plain, cluster: {server: "`+apiServer.URL+`"}}]
contexts: [{name: plain, context: {cluster: plain, user: nobody}}]
users: [{name: nobody, user: {}}]
current-context: plain
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	restore := source.IsolateRendering() // as main does
	t.Cleanup(restore)

	t.Run("a request through the default transport is refused before it is sent", func(t *testing.T) {
		before := requests.Load()
		resp, err := http.Get(apiServer.URL + "/version")
		if err == nil {
			_ = resp.Body.Close()
		}
		if !errors.Is(err, source.ErrNetworkRefused) {
			t.Errorf("http.Get() error = %v; want it refused", err)
		}
		if n := requests.Load() - before; n != 0 {
			t.Errorf("the server saw %d requests; want none", n)
		}
	})

	kubeFlagsConfig := func() (*rest.Config, error) {
		k := newKubeFlags()
		k.config.KubeConfig = &kubeconfig
		return k.restConfig("test")
	}
	for _, c := range []struct {
		command string
		config  func() (*rest.Config, error)
	}{
		{"the agent (--kubeconfig)", func() (*rest.Config, error) { return restConfig(kubeconfig) }},
		{"the CLI (kubectl's flags)", kubeFlagsConfig},
	} {
		t.Run(c.command+" reaches a plain-http API server", func(t *testing.T) {
			cfg, err := c.config()
			if err != nil {
				t.Fatal(err)
			}
			before := requests.Load()
			dc, err := discovery.NewDiscoveryClientForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dc.ServerVersion(); err != nil {
				t.Fatalf("ServerVersion() error = %v; want the client to use a transport of its own", err)
			}
			if n := requests.Load() - before; n != 1 {
				t.Errorf("the server saw %d requests; want 1", n)
			}
		})
	}

	t.Run("a client with TLS options keeps client-go's shared transport", func(t *testing.T) {
		tlsServer := httptest.NewTLSServer(http.NotFoundHandler())
		t.Cleanup(tlsServer.Close)
		ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsServer.Certificate().Raw})
		cfg := withOwnTransport(&rest.Config{Host: tlsServer.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}})
		if cfg.Proxy != nil {
			t.Error("withOwnTransport named a proxy for a config with a CA; client-go would no longer share its transport between the agent's clients")
		}
	})
}
