package chartrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/git"
	"tether.dev/tether/source/result"
)

// chartHTTP returns the HTTP client of a chart repository's conversations:
// git's transport rules (transport.go: timeouts, the proxy from the
// environment, TLS against the system's roots plus auth's CA bundle, error
// answers read up to 4 KiB and dropped, a body that stalls ended), and what
// to call when done with it.
func (rs *Repositories) chartHTTP(auth Auth) (*http.Client, func(), error) {
	if len(auth.CAFile) == 0 {
		return rs.client, func() {}, nil
	}
	tr, err := git.NewHTTPTransport(auth.CAFile)
	if err != nil {
		return nil, nil, err
	}
	return &http.Client{Transport: git.Bounded(tr), CheckRedirect: git.CredentialsToOneOrigin}, tr.CloseIdleConnections, nil
}

// newChartClient is the shared client of chart repositories without a CA
// bundle of their own.
func newChartClient() (*http.Client, error) {
	tr, err := git.NewHTTPTransport(nil)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: git.Bounded(tr), CheckRedirect: git.CredentialsToOneOrigin}, nil
}

// download GETs rawURL (the index, or a package) within limit bytes. The
// credentials of req go only to the repository's own scheme and host, as Helm
// sends them by default (a package may live on a CDN that must not see them).
// Errors are FetchErrors naming the chart and what was read; an answer
// outside 2xx is reported by its status alone, never by what it said.
func (rs *Repositories) download(ctx context.Context, rawURL string, req Request, limit int64, what string) ([]byte, error) {
	fail := func(reason string, err error) ([]byte, error) {
		return nil, &result.FetchError{URL: req.Repository, Ref: req.Label(), Reason: reason, Err: err}
	}
	client, done, err := rs.chartHTTP(req.Auth)
	if err != nil {
		return fail(v1alpha1.ReasonInvalidCredentials, err)
	}
	defer done()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return fail(v1alpha1.ReasonUnsupportedURL, fmt.Errorf("%s: %w", what, errors.Unwrap(err)))
	}
	if sameOrigin(rawURL, req.Repository) {
		setChartAuth(hreq, req.Auth)
	}
	resp, err := client.Do(hreq)
	if err != nil {
		return fail(httpReason(err), fmt.Errorf("reading %s: %w", what, git.WithoutURL(err)))
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fail(statusReason(resp.StatusCode), fmt.Errorf("reading %s: %s", what, git.StatusText(resp.StatusCode)))
	}
	if resp.ContentLength > limit {
		return fail(v1alpha1.ReasonRenderLimitExceeded, fmt.Errorf("%s is over the limit of %d bytes (%d announced)", what, limit, resp.ContentLength))
	}
	data, err := readBody(resp, limit)
	if err != nil {
		return fail(httpReason(err), fmt.Errorf("reading %s: %w", what, git.WithoutURL(err)))
	}
	if int64(len(data)) > limit {
		return fail(v1alpha1.ReasonRenderLimitExceeded, fmt.Errorf("%s is over the limit of %d bytes", what, limit))
	}
	return data, nil
}

// setChartAuth puts auth's credentials on r: a bearer token, or basic
// authentication.
func setChartAuth(r *http.Request, auth Auth) {
	switch {
	case auth.BearerToken != "":
		r.Header.Set("Authorization", "Bearer "+auth.BearerToken)
	case auth.Username != "" || auth.Password != "":
		r.SetBasicAuth(auth.Username, auth.Password)
	}
}

// sameOrigin reports whether a and b share a scheme and a host (with port).
func sameOrigin(a, b string) bool {
	ua, err := url.Parse(a)
	if err != nil {
		return false
	}
	ub, err := url.Parse(b)
	if err != nil {
		return false
	}
	return ua.Scheme == ub.Scheme && ua.Host == ub.Host
}

// statusReason classes an HTTP status of a chart repository.
func statusReason(code int) string {
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		return v1alpha1.ReasonAuthenticationFailed
	case http.StatusNotFound:
		return v1alpha1.ReasonRepositoryNotFound
	}
	return v1alpha1.ReasonChartRepositoryFailed
}

// httpReason classes a failed HTTP conversation.
func httpReason(err error) string {
	switch {
	case git.IsUntrustedCertificate(err):
		return v1alpha1.ReasonCertificateUntrusted
	case git.IsUnreachable(err), errors.Is(err, context.DeadlineExceeded):
		return v1alpha1.ReasonHostUnreachable
	}
	return v1alpha1.ReasonChartRepositoryFailed
}

// readBody reads resp's body, up to limit+1 bytes: into one buffer of the
// announced length when there is one, rather than one that doubles as it
// fills (a 20 MB index would leave about twice its size behind).
func readBody(resp *http.Response, limit int64) ([]byte, error) {
	body := io.LimitReader(resp.Body, limit+1)
	if resp.ContentLength <= 0 {
		return io.ReadAll(body)
	}
	buf := bytes.NewBuffer(make([]byte, 0, resp.ContentLength+1))
	_, err := buf.ReadFrom(body)
	return buf.Bytes(), err
}
