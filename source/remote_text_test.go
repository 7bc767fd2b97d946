package source_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
)

// pkt is one git pkt-line of payload.
func pkt(payload string) string { return fmt.Sprintf("%04x%s", len(payload)+4, payload) }

func TestAGitHostsOwnMessageIsNeverQuoted(t *testing.T) {
	const secret = "denied by gateway at 10.0.0.7, token=internal-7f3a"
	for _, tc := range []struct {
		name, body string
	}{
		{"an ERR line in place of the refs", pkt("# service=git-upload-pack\n") + "0000" + pkt("ERR "+secret+"\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
				_, _ = w.Write([]byte(tc.body))
			}))
			t.Cleanup(srv.Close)
			src := newSource(t, source.Options{})
			_, err := src.Fetch(t.Context(), source.Request{URL: srv.URL + "/org/deploy.git", Ref: v1alpha1.GitRef{Branch: "main"}})
			if err == nil {
				t.Fatal("Fetch succeeded against a host that refused")
			}
			if strings.Contains(err.Error(), "internal-7f3a") || strings.Contains(err.Error(), "10.0.0.7") {
				t.Errorf("error %q quotes the host's message", err)
			}
			if want := fmt.Sprintf("a message of its own (%d bytes", len(secret)); !strings.Contains(err.Error(), want) {
				t.Errorf("error %q; want it to say the host ended with %q", err, want)
			}
		})
	}
}
