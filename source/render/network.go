package render

import (
	"errors"
	"fmt"
	"net/http"
	"os"

	"tether.dev/tether/source/result"
)

// ErrNetworkRefused is wrapped by the error of every request made through the
// process's default HTTP transport once IsolateRendering has run: rendering, which
// is the only code that would use it, may not reach the network.
var ErrNetworkRefused = errors.New("rendering may not reach the network")

// gitAllowProtocol is the environment variable with which git (the program)
// decides which transports it may use; a list naming no transport refuses them all.
const gitAllowProtocol = "GIT_ALLOW_PROTOCOL"

// refusingTransport answers every request with an error, before any connection.
type refusingTransport struct{}

var _ http.RoundTripper = refusingTransport{}

func (refusingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_ = r.Body.Close() // a RoundTripper closes the body, even on error
	}
	return nil, fmt.Errorf("%w: %s %s refused", ErrNetworkRefused, r.Method, result.RedactURL(r.URL.String()))
}

// IsolateRendering makes the network unreachable from rendering by construction,
// whatever a kustomization says and whatever the check before kustomize runs
// missed. main calls it once, before anything else runs.
//
// Kustomize's loader downloads an http(s) path with a client that has no transport
// of its own, so it uses http.DefaultTransport; IsolateRendering replaces that
// (and http.DefaultClient's) with a transport that refuses every request, naming
// it. Whatever else in the process talks HTTP must therefore bring a transport of
// its own: the Kubernetes clients (client-go falls back to the default transport
// for a plain-http server without a proxy, so main gives every rest.Config a
// Proxy, which makes client-go build one) and git's HTTP clients (go-git's
// default one captures the default transport when its package is initialised,
// before main runs).
//
// Kustomize clones a git-shaped base by running the git program. The agent's
// image has none, and the kustomization check refuses every base kustomize would
// clone; in case a git program is on the path (the CLI on a laptop),
// IsolateRendering also sets GIT_ALLOW_PROTOCOL to a list naming no transport, so
// that a git the process runs refuses to fetch from anywhere. Tether itself never
// runs git: go-git does its work in process.
//
// restore puts back what was there; it is for tests, which share the process.
func IsolateRendering() (restore func()) {
	transport, client := http.DefaultTransport, http.DefaultClient.Transport
	protocols, protocolsSet := os.LookupEnv(gitAllowProtocol)
	http.DefaultTransport = refusingTransport{}
	http.DefaultClient.Transport = refusingTransport{}
	_ = os.Setenv(gitAllowProtocol, "none")
	return func() {
		http.DefaultTransport, http.DefaultClient.Transport = transport, client
		if protocolsSet {
			_ = os.Setenv(gitAllowProtocol, protocols)
		} else {
			_ = os.Unsetenv(gitAllowProtocol)
		}
	}
}
