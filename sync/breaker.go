package sync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	gosync "sync"
	"time"
)

// ClusterUnreachableError says a remote cluster's API server does not answer:
// its Syncs report it (reason ClusterUnreachable) and leave their objects there as
// they are, and no request is sent to it until the breaker's next try.
type ClusterUnreachableError struct {
	// Cluster is the cluster's name; Host its API server's URL.
	Cluster, Host string
	// RetryIn is how long until the next request is let through.
	RetryIn time.Duration
	// Err is the last failure seen.
	Err error
}

func (e *ClusterUnreachableError) Error() string {
	return fmt.Sprintf("cluster %s (%s) does not answer: %v; its objects are left as they are, and it is tried again in %s",
		e.Cluster, e.Host, e.Err, e.RetryIn.Round(time.Second))
}

func (e *ClusterUnreachableError) Unwrap() error { return e.Err }

// Bounds of a breaker's backoff, and of a request that has no deadline of its
// own (a watch is bounded by its server-side timeout instead).
const (
	breakerFirstWait = time.Second
	breakerMaxWait   = 30 * time.Second
	remoteRequestMax = 30 * time.Second
)

// breaker is a remote cluster's circuit breaker, in the transport of every client
// of that cluster: after a request fails to reach the API server (refused, reset,
// timed out), requests fail at once with a ClusterUnreachableError until a wait
// that doubles with each failure (breakerFirstWait to breakerMaxWait) has passed;
// then requests go through again, and the first answer of any status closes it.
// A dead cluster so costs its own Syncs a failed reconcile and no worker time,
// and the other clusters' Syncs keep their workers.
type breaker struct {
	cluster, host string
	now           func() time.Time
	// changed, when set, is called (in a goroutine of its own) when requests
	// start failing and when they reach the cluster again: its Syncs are queued,
	// to say so and to converge, without waiting for their interval.
	changed func()

	mu       gosync.Mutex
	failures int
	until    time.Time
	last     error
}

func newBreaker(cluster, host string) *breaker {
	return &breaker{cluster: cluster, host: host, now: time.Now}
}

// open returns the error requests fail with now, nil when they go through.
func (b *breaker) open() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failures == 0 || !b.now().Before(b.until) {
		return nil
	}
	return &ClusterUnreachableError{Cluster: b.cluster, Host: b.host, RetryIn: b.until.Sub(b.now()), Err: b.last}
}

// failed records a request that did not reach the API server.
func (b *breaker) failed(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	wait := breakerFirstWait << min(b.failures, 5)
	if b.failures == 0 && b.changed != nil {
		go b.changed()
	}
	b.failures++
	b.until = b.now().Add(min(wait, breakerMaxWait))
	b.last = err
}

// answered records an answer from the API server.
func (b *breaker) answered() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failures > 0 && b.changed != nil {
		go b.changed()
	}
	b.failures, b.last = 0, nil
}

// wrap is the breaker's transport wrapper (rest.Config.Wrap).
func (b *breaker) wrap(rt http.RoundTripper) http.RoundTripper {
	return breakerTransport{b: b, next: rt}
}

type breakerTransport struct {
	b    *breaker
	next http.RoundTripper
}

func (t breakerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.b.open(); err != nil {
		return nil, err
	}
	caller := req.Context()
	ctx, cancel := caller, context.CancelFunc(nil)
	if _, ok := ctx.Deadline(); !ok && req.URL.Query().Get("watch") != "true" {
		// A slow API server must not hold a worker: a request without a
		// deadline gets one.
		ctx, cancel = context.WithTimeout(ctx, remoteRequestMax)
		req = req.WithContext(ctx)
	}
	resp, err := t.next.RoundTrip(req)
	switch {
	case err != nil:
		timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
		if cancel != nil {
			cancel()
		}
		// A request its caller gave up on says nothing of the cluster.
		if caller.Err() == nil || timedOut {
			t.b.failed(err)
		}
		return nil, err
	case cancel != nil:
		resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	}
	t.b.answered()
	return resp, nil
}

// cancelOnClose ends a request's own deadline once its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
