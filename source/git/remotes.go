package git

import "github.com/go-git/go-git/v5/plumbing/transport"

// Remotes works out how to reach repositories: the credentials of each, the
// SSH host key check, and the HTTP client (remotes without a CA bundle of their
// own share one pool of connections, with bounded answers). It is safe for
// concurrent use.
type Remotes struct {
	// tempDir holds the private temporary files the known_hosts parser needs
	// for an instant.
	tempDir string
	// shared is go-git's client for http(s) remotes without a CA bundle.
	shared transport.Transport
}

// NewRemotes returns Remotes whose known_hosts files pass through tempDir (the
// cache directory: private to the agent). It installs Tether's HTTP transport
// into go-git's client table once per process.
func NewRemotes(tempDir string) (*Remotes, error) {
	if err := installHTTPTransport(); err != nil {
		return nil, err
	}
	shared, _, err := newGitHTTPClient(nil)
	if err != nil {
		return nil, err
	}
	return &Remotes{tempDir: tempDir, shared: shared}, nil
}
