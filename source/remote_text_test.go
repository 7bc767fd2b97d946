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
	const (
		secret = "denied by gateway at 10.0.0.7, token=internal-7f3a"
		head   = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
	)
	for _, tc := range []struct {
		name, body string
		pack       string // the answer to the request for a pack, if the refs were given
	}{
		{name: "an ERR line in place of the refs", body: pkt("# service=git-upload-pack\n") + "0000" + pkt("ERR "+secret+"\n")},
		{
			// The refs are fine; the pack's answer carries the host's message on
			// the side band's error channel (3) instead of the pack.
			name: "a message on the error channel in place of the pack",
			body: pkt("# service=git-upload-pack\n") + "0000" +
				pkt(head+" HEAD\x00side-band-64k ofs-delta shallow no-progress symref=HEAD:refs/heads/main\n") +
				pkt(head+" refs/heads/main\n") + "0000",
			pack: pkt("shallow "+head+"\n") + "0000" + pkt("NAK\n") + pkt("\x03"+secret) + "0000",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
					_, _ = w.Write([]byte(tc.pack))
					return
				}
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
