package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/harness"
)

// alertmanagerBin is Debian's Alertmanager (hack/alertmanager.sh installs it);
// TETHER_ALERTMANAGER names another.
func alertmanagerBin(t *testing.T) string {
	if p := os.Getenv("TETHER_ALERTMANAGER"); p != "" {
		return p
	}
	const debian = "/usr/bin/prometheus-alertmanager"
	if _, err := os.Stat(debian); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Alertmanager at %s: run hack/alertmanager.sh", debian)
		}
		t.Skipf("no Alertmanager at %s: run hack/alertmanager.sh (make test does)", debian)
	}
	return debian
}

// startAlertmanager runs a real Alertmanager on loopback, alone (no cluster),
// until the test ends, and returns its base URL.
func startAlertmanager(t *testing.T) string {
	bin := alertmanagerBin(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "alertmanager.yml")
	harness.Must(t, os.WriteFile(cfg, []byte("route: {receiver: none}\nreceivers: [{name: none}]\n"), 0o600))
	addr := harness.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	cmd := exec.CommandContext(ctx, bin, "--config.file="+cfg, "--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--cluster.listen-address=")
	var out harness.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	harness.Must(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("alertmanager:\n%s", out.String())
		}
	})
	base := "http://" + addr
	harness.Eventually(t, time.Minute, "Alertmanager ready", func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/-/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	return base
}

// activeAlerts lists the alerts Alertmanager holds (resolved ones are not listed).
func activeAlerts(ctx context.Context, base string) ([]map[string]any, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v2/alerts", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var alerts []map[string]any
	return alerts, json.NewDecoder(resp.Body).Decode(&alerts)
}

// A real Alertmanager receives the alert of a failing Sync, then its resolution.
func TestAlertmanagerReceivesThenResolvesASyncsAlert(t *testing.T) {
	base := startAlertmanager(t)
	r := Receiver{Type: v1alpha1.NotifierAlertmanager, Address: base}
	send := func(a Alert) {
		t.Helper()
		req, err := AlertRequest(r, "team-a", "web", a, time.Now())
		harness.Must(t, err)
		_, err = fastSender(t).Send(t.Context(), req)
		harness.Must(t, err)
	}

	send(Alert{Firing: true, Reason: v1alpha1.ReasonRenderFailed, Message: "kustomization.yaml: unknown field"})
	harness.Eventually(t, time.Minute, "the alert firing in Alertmanager", func(ctx context.Context) (bool, error) {
		alerts, err := activeAlerts(ctx, base)
		if err != nil || len(alerts) != 1 {
			return false, err
		}
		labels, _ := alerts[0]["labels"].(map[string]any)
		ann, _ := alerts[0]["annotations"].(map[string]any)
		return labels["alertname"] == AlertName && labels["namespace"] == "team-a" && labels["sync"] == "web" &&
			ann["reason"] == v1alpha1.ReasonRenderFailed, nil
	})

	send(Alert{})
	harness.Eventually(t, time.Minute, "the alert resolved in Alertmanager", func(ctx context.Context) (bool, error) {
		alerts, err := activeAlerts(ctx, base)
		return err == nil && len(alerts) == 0, err
	})
}
