package notify

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// SenderOptions say how a receiver is called.
type SenderOptions struct {
	// AllowedHosts restricts the hosts a notification may reach: a host name
	// ("hooks.slack.com"), or "*.example.com" for its subdomains. Empty: any host.
	AllowedHosts []string
	// Attempts is how many times one request is tried before it is given up.
	Attempts int
	// MinBackoff and MaxBackoff bound the wait between attempts, doubled each time,
	// or what a Retry-After header asks for, up to MaxRetryAfter.
	MinBackoff, MaxBackoff, MaxRetryAfter time.Duration
	// Timeout bounds each attempt, from connecting to reading the answer.
	Timeout time.Duration
}

// DefaultSenderOptions: five attempts over about half a minute, ten seconds each.
func DefaultSenderOptions() SenderOptions {
	return SenderOptions{Attempts: 5, MinBackoff: time.Second, MaxBackoff: 30 * time.Second, MaxRetryAfter: 5 * time.Minute, Timeout: 10 * time.Second}
}

// HostAllowed reports whether the options let a notification reach host.
func (o SenderOptions) HostAllowed(host string) bool {
	if len(o.AllowedHosts) == 0 {
		return true
	}
	host = strings.ToLower(host)
	for _, a := range o.AllowedHosts {
		a = strings.ToLower(a)
		if suffix, ok := strings.CutPrefix(a, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if host == a {
			return true
		}
	}
	return false
}

// DeliveryError is a request given up. It names the status code or the kind of
// network failure, never the receiver's URL (which may carry a token).
type DeliveryError struct {
	// Status is the last HTTP status code, 0 when no answer came.
	Status int
	// Attempts made.
	Attempts int
	// Reason in words.
	Reason string
}

func (e *DeliveryError) Error() string {
	return fmt.Sprintf("%s after %d attempt(s)", e.Reason, e.Attempts)
}

// Sender calls one receiver. It holds its own HTTP client (the receiver's CA).
type Sender struct {
	opts   SenderOptions
	client *http.Client
}

// NewSender returns a Sender that trusts caPEM (when not empty) besides the
// system's roots, and sends through proxy (an http(s) URL) when it is set, else
// through the proxy the agent's environment names. A proxy is an address the
// agent calls: its host must be one notifications may reach.
//
// Its transport is its own, never derived from http.DefaultTransport: the agent
// replaces that with one refusing every request (source.IsolateRendering), so
// that rendering cannot reach the network.
func NewSender(opts SenderOptions, caPEM []byte, proxy string) (*Sender, error) {
	proxyOf := http.ProxyFromEnvironment
	if proxy != "" {
		u, err := url.Parse(proxy)
		if err != nil || u.Host == "" {
			return nil, errors.New("the proxy is not a URL")
		}
		if !opts.HostAllowed(u.Hostname()) {
			return nil, errors.New("the proxy's host is not one notifications may reach (--notify-allowed-hosts)")
		}
		proxyOf = http.ProxyURL(u)
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caPEM) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("ca.crt holds no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 proxyOf,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       tlsConfig,
		TLSHandshakeTimeout:   10 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		MaxIdleConnsPerHost:   2,
		ForceAttemptHTTP2:     true,
	}
	s := &Sender{opts: opts}
	s.client = &http.Client{
		Transport: tr,
		Timeout:   opts.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 3 {
				return errors.New("too many redirects")
			}
			if !opts.HostAllowed(req.URL.Hostname()) {
				return errors.New("redirected to a host that notifications may not reach")
			}
			return nil
		},
	}
	return s, nil
}

// Send delivers req, retrying on a network error, a 5xx or a 429 with backoff
// (or as Retry-After asks). It returns the answer's status code.
func (s *Sender) Send(ctx context.Context, req Request) (int, error) {
	u, err := url.Parse(req.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return 0, &DeliveryError{Reason: "the address is not an http(s) URL"}
	}
	if !s.opts.HostAllowed(u.Hostname()) {
		return 0, &DeliveryError{Reason: "the address's host is not among the hosts notifications may reach (--notify-allowed-hosts)"}
	}
	backoff, attempts := s.opts.MinBackoff, max(1, s.opts.Attempts)
	var last *DeliveryError
	for attempt := 1; attempt <= attempts; attempt++ {
		status, wait, err := s.once(ctx, req)
		if err == nil {
			return status, nil
		}
		if !errors.As(err, &last) {
			last = &DeliveryError{Reason: err.Error()}
		}
		last.Attempts = attempt
		if wait < 0 || attempt == attempts {
			return status, last
		}
		if wait == 0 {
			wait, backoff = backoff, min(2*backoff, s.opts.MaxBackoff)
		}
		if err := sleepCtx(ctx, wait); err != nil {
			return status, last
		}
	}
	return 0, last
}

// once makes one attempt. wait < 0: do not retry; 0: retry after the backoff;
// > 0: retry after that long (Retry-After).
func (s *Sender) once(ctx context.Context, req Request) (status int, wait time.Duration, err error) {
	hreq, err := http.NewRequestWithContext(ctx, req.Method, req.URL, req.bodyReader())
	if err != nil {
		return 0, -1, &DeliveryError{Reason: "cannot build the request"}
	}
	for k, v := range req.Header {
		hreq.Header[k] = v
	}
	hreq.Header.Set("User-Agent", "tether-notify")
	resp, err := s.client.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return 0, -1, &DeliveryError{Reason: "cancelled"}
		}
		return 0, 0, &DeliveryError{Reason: "no answer: " + netReason(err)}
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return resp.StatusCode, s.retryAfter(resp.Header.Get("Retry-After")), &DeliveryError{Status: resp.StatusCode, Reason: "answered " + strconv.Itoa(resp.StatusCode)}
	case resp.StatusCode >= 300:
		return resp.StatusCode, -1, &DeliveryError{Status: resp.StatusCode, Reason: "answered " + strconv.Itoa(resp.StatusCode)}
	}
	if req.URL == slackPostMessage {
		// The Web API answers 200 with {"ok": false, "error": "..."} when it refuses.
		var ans struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &ans) == nil && !ans.OK {
			return resp.StatusCode, -1, &DeliveryError{Status: resp.StatusCode, Reason: "Slack refused: " + firstLine(ans.Error)}
		}
	}
	return resp.StatusCode, 0, nil
}

// retryAfter reads a Retry-After header (seconds or an HTTP date); 0 when absent.
func (s *Sender) retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = time.Until(t)
	}
	if d <= 0 {
		return 0
	}
	return min(d, s.opts.MaxRetryAfter)
}

// netReason is a network error without the URL net/http puts in it.
func netReason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var to interface{ Timeout() bool }
	if errors.As(err, &to) && to.Timeout() {
		return "timed out"
	}
	return firstLine(err.Error())
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
