package source_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
)

// hugeBody is what a hostile git host answers a refused request with: 300 MiB,
// streamed from a fixed 64 KiB buffer, never held whole by the server.
const hugeBody = 300 << 20

// startRefusingHost starts a loopback server that answers every request with
// status and a body of size bytes made of text repeated, and counts requests
// and the body bytes it managed to send.
func startRefusingHost(t *testing.T, status int, text string, size int64) (url string, requests, sent *atomic.Int64) {
	t.Helper()
	requests, sent = &atomic.Int64{}, &atomic.Int64{}
	chunk := []byte(strings.Repeat(text, 64<<10/len(text)+1)[:64<<10])
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		for left := size; left > 0; {
			n, err := w.Write(chunk[:min(int64(len(chunk)), left)])
			sent.Add(int64(n))
			if err != nil {
				return // the client hung up
			}
			left -= int64(n)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/org/deploy.git", requests, sent
}

func TestWhatARemoteAnswersIsBoundedAndNeverQuoted(t *testing.T) {
	t.Run("a 403 with a 300 MiB body costs a few KiB and says only the status", func(t *testing.T) {
		url, requests, sent := startRefusingHost(t, http.StatusForbidden, "forbidden ", hugeBody)
		src := newSource(t, source.Options{})
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := src.Fetch(t.Context(), source.Request{URL: url, Ref: v1alpha1.GitRef{Branch: "main"}})
		runtime.ReadMemStats(&after)
		var fe *source.FetchError
		if !errors.As(err, &fe) {
			t.Fatalf("Fetch error = %v, want a *source.FetchError", err)
		}
		if fe.Reason != source.ReasonAuthenticationFailed {
			t.Errorf("reason = %s, want %s", fe.Reason, source.ReasonAuthenticationFailed)
		}
		if !strings.Contains(err.Error(), "HTTP 403 Forbidden") || strings.Contains(err.Error(), "forbidden forbidden") {
			t.Errorf("error = %q, want the status (HTTP 403 Forbidden) and none of the body", err)
		}
		// On main, go-git read the whole body into its error: TotalAlloc grew by
		// over 600 MiB (bytes.Buffer doubling to 512 MiB, then the string).
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("allocated %d KiB over the Fetch; %d requests; the server sent %d KiB of its %d MiB", allocated>>10, requests.Load(), sent.Load()>>10, hugeBody>>20)
		if allocated > 16<<20 {
			t.Errorf("the Fetch allocated %d MiB, want at most 16 MiB", allocated>>20)
		}
		if sent.Load() >= hugeBody {
			t.Errorf("the agent read the whole %d MiB body", hugeBody>>20)
		}
	})

	t.Run("a body of an internal endpoint reaches neither the error nor its reason", func(t *testing.T) {
		secret := "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY internal-admin-token "
		for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusInternalServerError, http.StatusTeapot} {
			url, _, _ := startRefusingHost(t, status, secret, int64(len(secret)))
			src := newSource(t, source.Options{})
			_, err := src.Fetch(t.Context(), source.Request{URL: url, Ref: v1alpha1.GitRef{Branch: "main"}})
			if err == nil {
				t.Fatalf("status %d: Fetch succeeded", status)
			}
			for _, leak := range []string{"wJalrXUtnFEMI", "internal-admin-token", "AWS_SECRET"} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("status %d: error %q quotes the remote's body (%s)", status, err, leak)
				}
			}
			if want := fmt.Sprintf("HTTP %d %s", status, http.StatusText(status)); !strings.Contains(err.Error(), want) {
				t.Errorf("status %d: error %q does not name the status (%s)", status, err, want)
			}
			t.Logf("status %d: %v", status, err)
		}
	})

	t.Run("a ref listing is cut at 8 MiB", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
			_, _ = io.WriteString(w, pktLine("# service=git-upload-pack\n")+"0000")
			_, _ = io.WriteString(w, pktLine(strings.Repeat("a", 40)+" refs/heads/main\x00ofs-delta\n"))
			// 64 MiB of branches, sent for as long as the agent reads.
			for i := range (64 << 20) / 80 {
				if _, err := io.WriteString(w, pktLine(fmt.Sprintf("%s refs/heads/branch-%08d\n", strings.Repeat("b", 40), i))); err != nil {
					return
				}
			}
		}))
		t.Cleanup(srv.Close)
		src := newSource(t, source.Options{})
		_, err := src.Fetch(t.Context(), source.Request{URL: srv.URL + "/big.git", Ref: v1alpha1.GitRef{Branch: "main"}})
		if err == nil || !strings.Contains(err.Error(), "ref listing is over") {
			t.Errorf("Fetch error = %v, want the listing cut at its bound", err)
		}
	})
}

// pktLine frames payload as one line of git's pkt-line format.
func pktLine(payload string) string { return fmt.Sprintf("%04x%s", len(payload)+4, payload) }

// refusingTransport is what the agent makes of http.DefaultTransport so that
// nothing in rendering can open a connection.
type refusingTransport struct{ asked atomic.Int64 }

func (r *refusingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	r.asked.Add(1)
	return nil, errors.New("the process's default HTTP transport refuses every request")
}

func TestGitNeverUsesTheDefaultHTTPTransport(t *testing.T) {
	// Refused both ways the process could: the variable replaced, and the
	// transport it held (which libraries may have kept) unable to dial.
	refusing := &refusingTransport{}
	saved := http.DefaultTransport
	original := saved.(*http.Transport)
	savedDial := original.DialContext
	original.CloseIdleConnections()
	original.DialContext = func(context.Context, string, string) (net.Conn, error) {
		refusing.asked.Add(1)
		return nil, errors.New("the process's default HTTP transport refuses every connection")
	}
	http.DefaultTransport = refusing
	t.Cleanup(func() {
		http.DefaultTransport = saved
		original.DialContext = savedDial
	})

	src := newSource(t, source.Options{})
	tlsServer := gitserver.Start(t, gitserver.Options{TLS: true})
	for _, tc := range []struct {
		name string
		repo *gitserver.Repo
		auth source.Auth
	}{
		{"over HTTP", gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "plain"), source.Auth{}},
		{"over HTTPS with the host's CA in the Secret", tlsServer.CreateRepo(t, "tls"), source.Auth{CAFile: tlsServer.CACert()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			commit := tc.repo.Commit(t, map[string]string{"cm.yaml": configMap("web", "hello")}, "add web")
			if rev := fetch(t, src, source.Request{URL: tc.repo.URL(), Ref: main, Auth: tc.auth}); rev.Commit != commit {
				t.Errorf("revision = %s, want %s", rev, commit)
			}
		})
	}
	if n := refusing.asked.Load(); n != 0 {
		t.Errorf("the default transport was asked %d times", n)
	}
}
