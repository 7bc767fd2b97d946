package git

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	gosync "sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/skeema/knownhosts"
	"golang.org/x/crypto/ssh"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/result"
)

// sshTimeout bounds connecting and the SSH handshake; go-git's SSH transport does
// not watch the context while it dials.
const sshTimeout = 30 * time.Second

// Auth holds the credentials of a repository (result.Auth).
type Auth = result.Auth

// Remote is how to reach one repository with one set of credentials.
type Remote struct {
	// URL without credentials: what git and error messages see.
	URL string
	// Method is how go-git authenticates to the remote.
	Method transport.AuthMethod
	// Done releases what the remote holds (a client of its own for a CA bundle).
	Done func()
	// Key identifies the credentials (see Auth.Key); empty without any.
	Key string
	// hostKey records what the SSH host key check decided; nil over HTTP.
	hostKey *hostKeyCheck
	// Host is "host:port" of the endpoint; "" for a local repository.
	Host string
	// Tenant is who fetches (the Request's Tenant).
	Tenant string
}

// HostOf is the host:port a gate admits conversations with; "" for a local
// file:// repository, which is always admitted.
func HostOf(ep *transport.Endpoint) string {
	if ep.Protocol == "file" {
		return ""
	}
	return net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
}

// For works out how to reach rawURL with auth. Credentials written into an
// http(s) URL are taken out of it; the Secret's, when given, win over them.
func (rs *Remotes) For(rawURL string, auth Auth) (*Remote, error) {
	url, urlAuth := SplitCredentials(rawURL)
	r := &Remote{URL: url, Method: urlAuth, Key: auth.Key(), Done: func() {}}
	// Every spelling of a URL shares one cache entry, credentials written into it
	// or not: those credentials key resolutions too.
	if basic, ok := urlAuth.(*githttp.BasicAuth); ok {
		r.Key += "+url:" + Auth{Username: basic.Username, Password: basic.Password}.Key()
	}
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		return nil, fmt.Errorf("parsing URL %s: %w", result.RedactURL(url), err)
	}
	r.Host = HostOf(ep)
	switch ep.Protocol {
	case "ssh":
		if r.Method, r.hostKey, err = rs.sshAuth(ep, auth); err != nil {
			return nil, err
		}
	case "http", "https":
		// The remote's own client goes with its credentials (see gitHTTP).
		a := &httpAuth{}
		if basic, ok := urlAuth.(*githttp.BasicAuth); ok {
			a.inner = basic
		}
		switch {
		case auth.BearerToken != "":
			a.inner = &githttp.TokenAuth{Token: auth.BearerToken}
		case auth.Username != "" || auth.Password != "":
			a.inner = &githttp.BasicAuth{Username: auth.Username, Password: auth.Password}
		}
		if a.client, r.Done, err = rs.httpClient(auth.CAFile); err != nil {
			return nil, err
		}
		r.Method = a
	}
	return r, nil
}

// sshAuth builds public-key authentication for an SSH endpoint, with the host key
// checked against auth.KnownHosts.
func (rs *Remotes) sshAuth(ep *transport.Endpoint, auth Auth) (transport.AuthMethod, *hostKeyCheck, error) {
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(portOr(ep.Port, 22)))
	if len(auth.KnownHosts) == 0 {
		return nil, nil, &credentialsError{reason: v1alpha1.ReasonHostKeyUnknown,
			err: fmt.Errorf("no known_hosts given for %s: SSH host keys are always verified", addr)}
	}
	if len(auth.Identity) == 0 {
		return nil, nil, &credentialsError{reason: v1alpha1.ReasonInvalidCredentials,
			err: errors.New("an SSH URL needs an identity (private key) in the Secret")}
	}
	signer, err := parseIdentity(auth.Identity, auth.Password)
	if err != nil {
		return nil, nil, &credentialsError{reason: v1alpha1.ReasonInvalidCredentials, err: err}
	}
	db, err := rs.knownHosts(auth.KnownHosts)
	if err != nil {
		return nil, nil, &credentialsError{reason: v1alpha1.ReasonInvalidCredentials, err: err}
	}
	user := ep.User
	if auth.Username != "" {
		user = auth.Username
	}
	if user == "" {
		user = gitssh.DefaultUsername
	}
	check := &hostKeyCheck{callback: db.HostKeyCallback()}
	return &sshPublicKey{user: user, signer: signer, check: check, algorithms: db.HostKeyAlgorithms(addr)}, check, nil
}

func portOr(port, dflt int) int {
	if port <= 0 {
		return dflt
	}
	return port
}

// parseIdentity reads a PEM private key, unlocking it with passphrase when it is
// encrypted. Errors say what is wrong with the key, never what it holds.
func parseIdentity(pem []byte, passphrase string) (ssh.Signer, error) {
	signer, err := ssh.ParsePrivateKey(pem)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		if passphrase == "" {
			return nil, errors.New("the SSH identity is encrypted and the Secret has no password to unlock it")
		}
		signer, err = ssh.ParsePrivateKeyWithPassphrase(pem, []byte(passphrase))
	}
	if err != nil {
		return nil, fmt.Errorf("reading the SSH identity: %w", err)
	}
	return signer, nil
}

// knownHosts parses known_hosts content. The parser reads files only, so the
// content goes through a private temporary file in the cache directory that is
// removed at once.
func (rs *Remotes) knownHosts(content []byte) (*knownhosts.HostKeyDB, error) {
	f, err := os.CreateTemp(rs.tempDir, "known_hosts-*")
	if err != nil {
		return nil, fmt.Errorf("reading known_hosts: %w", err)
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(content)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("reading known_hosts: %w", werr)
	}
	db, err := knownhosts.NewDB(f.Name())
	if err != nil {
		return nil, errors.New("known_hosts is not in OpenSSH known_hosts form")
	}
	return db, nil
}

// hostKeyCheck verifies SSH host keys and remembers a refusal, so that the error
// of a failed fetch can be classed however the transport wrapped it.
type hostKeyCheck struct {
	callback ssh.HostKeyCallback
	mu       gosync.Mutex
	refused  error
}

func (c *hostKeyCheck) verify(hostname string, addr net.Addr, key ssh.PublicKey) error {
	err := c.callback(hostname, addr, key)
	if err != nil {
		c.mu.Lock()
		c.refused = err
		c.mu.Unlock()
	}
	return err
}

// reason classes the last refusal: v1alpha1.ReasonHostKeyMismatch when known_hosts holds
// other keys for the host, v1alpha1.ReasonHostKeyUnknown when it holds none; "" if the
// host key was accepted.
func (c *hostKeyCheck) reason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.refused == nil:
		return ""
	case knownhosts.IsHostKeyChanged(c.refused):
		return v1alpha1.ReasonHostKeyMismatch
	case knownhosts.IsHostUnknown(c.refused):
		return v1alpha1.ReasonHostKeyUnknown
	}
	return v1alpha1.ReasonHostKeyMismatch // a revoked key
}

// sshPublicKey is go-git's SSH AuthMethod with what go-git's own lacks: a dial
// timeout, the host key algorithms of known_hosts, and the remembered check.
type sshPublicKey struct {
	user       string
	signer     ssh.Signer
	check      *hostKeyCheck
	algorithms []string
}

var _ gitssh.AuthMethod = (*sshPublicKey)(nil)

func (a *sshPublicKey) Name() string   { return gitssh.PublicKeysName }
func (a *sshPublicKey) String() string { return "user: " + a.user + ", name: " + a.Name() }

func (a *sshPublicKey) ClientConfig() (*ssh.ClientConfig, error) {
	return &ssh.ClientConfig{
		User:              a.user,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(a.signer)},
		HostKeyCallback:   a.check.verify,
		HostKeyAlgorithms: a.algorithms,
		Timeout:           sshTimeout,
	}, nil
}

// credentialsError is credentials that cannot be used as given: the failure is
// known before any request.
type credentialsError struct {
	reason string
	err    error
}

func (e *credentialsError) Error() string { return e.err.Error() }
func (e *credentialsError) Unwrap() error { return e.err }

// SplitCredentials takes the credentials written into an http(s) URL
// ("https://user:token@host/...", or a token alone as the user) out of it and returns
// them as basic auth. Git then never holds them in a URL, so no error message that
// quotes the URL can show them, and the cache's config on disk does not store them.
func SplitCredentials(raw string) (string, transport.AuthMethod) {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil || (u.Scheme != "http" && u.Scheme != "https") {
		return raw, nil
	}
	password, _ := u.User.Password()
	auth := &githttp.BasicAuth{Username: u.User.Username(), Password: password}
	u.User = nil
	return u.String(), auth
}
