package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"tether.dev/tether/test/controlplane"
)

// TestUIPrintsItsURLAndServesIt: tether ui prints one line, the URL to open,
// which starts with http:// and signs a browser in.
func TestUIPrintsItsURLAndServesIt(t *testing.T) {
	cp := controlplane.Shared(t)
	controlplane.InstallCRDs(t, cp.Config(), "../../deploy/base/crd")
	ctx, cancel := context.WithCancel(t.Context())
	out, stdout := io.Pipe()
	var errOut strings.Builder
	ended := make(chan error, 1)
	go func() {
		ended <- run(ctx, []string{"ui", "--no-browser", "--address", "127.0.0.1:0", "--kubeconfig", cp.KubeconfigPath()}, stdout, &errOut)
		_ = stdout.Close()
	}()
	defer func() {
		cancel()
		if err := <-ended; err != nil {
			t.Errorf("tether ui: %v\n%s", err, errOut.String())
		}
	}()
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatalf("tether ui printed nothing: %v\n%s", lines.Err(), errOut.String())
	}
	url := lines.Text()
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.Contains(url, "/login?token=") {
		t.Fatalf("tether ui printed %q, want the URL with its one-time token", url)
	}
	client := &http.Client{Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Errorf("opening the URL: %d with cookies %v, want 303 and the session", resp.StatusCode, resp.Cookies())
	}
}

func TestUIServesOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:9000", ":9000", "192.0.2.1:9000", "example.com:9000"} {
		var out, errOut strings.Builder
		err := run(t.Context(), []string{"ui", "--no-browser", "--address", addr}, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("tether ui --address %s: %v, want a refusal naming loopback", addr, err)
		}
	}
}
