package git

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	gosync "sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"tether.dev/tether/api/v1alpha1"
)

// Bounds of git's HTTP conversations. go-git's default client is
// http.DefaultTransport, which has no response header timeout, reads an error
// answer whole into the error it returns, and is the transport the rest of the
// process may have reasons to refuse; git gets clients of its own instead.
const (
	// gitDialTimeout bounds opening a TCP connection to a git host (or its proxy).
	gitDialTimeout = 30 * time.Second
	// gitTLSHandshakeTimeout bounds the TLS handshake.
	gitTLSHandshakeTimeout = 15 * time.Second
	// gitResponseHeaderTimeout bounds the wait for a response's headers once the
	// request is sent. git http-backend sends its headers before it counts the
	// objects of a pack.
	gitResponseHeaderTimeout = time.Minute
	// gitIdleTimeout bounds the wait for the next byte of a response body: a
	// host that starts an answer and then stalls is given up on without
	// waiting for the whole Fetch's Timeout. It also closes idle pooled
	// connections.
	gitIdleTimeout = 90 * time.Second
	// errorBodyLimit is the most of an error answer (a status outside 2xx) read
	// before the connection is dropped. None of it is kept: what a remote says
	// is not quoted in conditions, Events or logs.
	errorBodyLimit = 4 << 10
	// maxRefAdvertisement bounds a ref listing's answer: a repository with
	// 100,000 refs advertises about 6 MiB.
	maxRefAdvertisement = 8 << 20
)

// errRefAdvertisementTooLarge is a ref listing over maxRefAdvertisement.
var errRefAdvertisementTooLarge = fmt.Errorf("the remote's ref listing is over %d bytes, the most read", maxRefAdvertisement)

// NewHTTPTransport is the transport of git's HTTP conversations: the proxy
// from the environment (HTTPS_PROXY, HTTP_PROXY, NO_PROXY), explicit timeouts,
// TLS 1.2 or newer against the system's roots plus caBundle.
func NewHTTPTransport(caBundle []byte) (*http.Transport, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caBundle) > 0 {
		roots, err := x509.SystemCertPool()
		if err != nil || roots == nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(caBundle) {
			return nil, &credentialsError{reason: v1alpha1.ReasonInvalidCredentials, err: errors.New("caFile holds no PEM certificate")}
		}
		tlsConfig.RootCAs = roots
	}
	dialer := &net.Dialer{Timeout: gitDialTimeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       tlsConfig,
		TLSHandshakeTimeout:   gitTLSHandshakeTimeout,
		ResponseHeaderTimeout: gitResponseHeaderTimeout,
		IdleConnTimeout:       gitIdleTimeout,
		ExpectContinueTimeout: time.Second,
		MaxIdleConnsPerHost:   4,
		ForceAttemptHTTP2:     true,
	}, nil
}

// boundedAnswers is the RoundTripper between go-git and the network. go-git
// reads the whole body of an answer outside 2xx into its error (a 300 MiB body
// made a 1.5 GiB heap) and the error text reached conditions and Events; here
// such a body is read up to errorBodyLimit, dropped, and replaced by a short
// text of ours ("HTTP 403 Forbidden"), which is all go-git's error then says.
// A 2xx body is watched: one that stalls for longer than idle ends the
// request, and a ref listing is cut at maxRefAdvertisement.
type boundedAnswers struct {
	next http.RoundTripper
	idle time.Duration
}

var _ http.RoundTripper = (*boundedAnswers)(nil)

// Bounded returns next with its answers bounded as git's are (boundedAnswers):
// chart repositories are spoken to by the same rules.
func Bounded(next http.RoundTripper) http.RoundTripper {
	return &boundedAnswers{next: next, idle: gitIdleTimeout}
}

func (b *boundedAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	resp, err := b.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.CopyN(io.Discard, resp.Body, errorBodyLimit)
		_ = resp.Body.Close()
		cancel()
		text := StatusText(resp.StatusCode)
		resp.Body = io.NopCloser(strings.NewReader(text))
		resp.ContentLength = int64(len(text))
		resp.Header.Del("Content-Encoding")
		return resp, nil
	}
	limit := int64(-1)
	if strings.HasSuffix(req.URL.Path, "/info/refs") {
		limit = maxRefAdvertisement
	}
	resp.Body = newWatchedBody(resp.Body, cancel, b.idle, limit)
	return resp, nil
}

// StatusText is what an answer outside 2xx is reported as: the status code and
// Go's name for it, never the remote's words.
func StatusText(code int) string {
	if name := http.StatusText(code); name != "" {
		return fmt.Sprintf("HTTP %d %s", code, name)
	}
	return fmt.Sprintf("HTTP %d", code)
}

// watchedBody ends its request when no byte arrives for idle, and fails a read
// past limit (when not negative).
type watchedBody struct {
	body   io.ReadCloser
	cancel context.CancelFunc
	timer  *time.Timer
	idle   time.Duration
	left   int64
	limit  int64
	once   gosync.Once
}

func newWatchedBody(body io.ReadCloser, cancel context.CancelFunc, idle time.Duration, limit int64) *watchedBody {
	return &watchedBody{body: body, cancel: cancel, timer: time.AfterFunc(idle, cancel), idle: idle, left: limit, limit: limit}
}

func (w *watchedBody) Read(p []byte) (int, error) {
	if w.limit >= 0 {
		if w.left <= 0 {
			return 0, errRefAdvertisementTooLarge
		}
		p = p[:min(int64(len(p)), w.left)]
	}
	n, err := w.body.Read(p)
	if n > 0 {
		w.timer.Reset(w.idle)
		w.left -= int64(n)
	}
	return n, err
}

func (w *watchedBody) Close() error {
	err := w.body.Close()
	w.once.Do(func() {
		w.timer.Stop()
		w.cancel()
	})
	return err
}

// gitHTTP is the transport go-git uses for http and https URLs in this
// process. go-git picks a transport by scheme from a process-wide table and
// has no per-call option for it, so a conversation's own client travels in its
// AuthMethod (httpAuth); a call that brings none gets a client of ours with the
// same bounds, never http.DefaultTransport. Such a call cannot pass go-git a CA
// bundle or a proxy of its own (go-git would want to clone an *http.Transport);
// this package passes them in the client instead.
type gitHTTP struct {
	fallback transport.Transport
}

var _ transport.Transport = gitHTTP{}

var installGitHTTP gosync.Once

// installHTTPTransport replaces go-git's http and https transports, once per
// process, with gitHTTP.
func installHTTPTransport() error {
	var err error
	installGitHTTP.Do(func() {
		var fallback transport.Transport
		if fallback, _, err = newGitHTTPClient(nil); err != nil {
			return
		}
		t := gitHTTP{fallback: fallback}
		client.InstallProtocol("http", t)
		client.InstallProtocol("https", t)
	})
	return err
}

func (g gitHTTP) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	if a, ok := auth.(*httpAuth); ok {
		return a.client.NewUploadPackSession(ep, a.method())
	}
	return g.fallback.NewUploadPackSession(ep, auth)
}

func (g gitHTTP) NewReceivePackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.ReceivePackSession, error) {
	if a, ok := auth.(*httpAuth); ok {
		return a.client.NewReceivePackSession(ep, a.method())
	}
	return g.fallback.NewReceivePackSession(ep, auth)
}

// httpAuth carries one remote's HTTP client, and its credentials if any, to
// gitHTTP.
type httpAuth struct {
	client transport.Transport
	// inner is the credentials; nil sends none.
	inner githttp.AuthMethod
}

var _ githttp.AuthMethod = (*httpAuth)(nil)

// method is the credentials as go-git wants them: an untyped nil when none.
func (a *httpAuth) method() transport.AuthMethod {
	if a.inner == nil {
		return nil
	}
	return a.inner
}

func (a *httpAuth) Name() string { return "tether-http" }

func (a *httpAuth) String() string {
	if a.inner == nil {
		return a.Name()
	}
	return a.inner.String()
}

func (a *httpAuth) SetAuth(r *http.Request) {
	if a.inner != nil {
		a.inner.SetAuth(r)
	}
}

// httpClient returns the go-git client of a remote trusting caBundle besides the
// system's roots, and what to call when the remote is done with. Remotes
// without a bundle share one pool of connections.
func (rs *Remotes) httpClient(caBundle []byte) (transport.Transport, func(), error) {
	if len(caBundle) == 0 {
		return rs.shared, func() {}, nil
	}
	c, tr, err := newGitHTTPClient(caBundle)
	if err != nil {
		return nil, nil, err
	}
	return c, tr.CloseIdleConnections, nil
}

// newGitHTTPClient is a go-git client over NewHTTPTransport(caBundle), with
// bounded answers.
func newGitHTTPClient(caBundle []byte) (transport.Transport, *http.Transport, error) {
	tr, err := NewHTTPTransport(caBundle)
	if err != nil {
		return nil, nil, err
	}
	return githttp.NewClient(&http.Client{Transport: &boundedAnswers{next: tr, idle: gitIdleTimeout}}), tr, nil
}

// WithStatus puts the status of an HTTP answer outside 2xx that go-git reports
// only as a number ("status code: 500") in our words in front of err.
// go-git's error types have no Unwrap, so they are looked into (gitCauses).
func WithStatus(err error) error {
	for e := range gitCauses(err) {
		var status *githttp.Err
		if errors.As(e, &status) && status.Response != nil {
			return fmt.Errorf("%s: %w", StatusText(status.Response.StatusCode), err)
		}
	}
	return err
}
