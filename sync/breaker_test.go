package sync

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// flakyTransport fails while down, and answers 200 otherwise; it counts the
// requests that reached it.
type flakyTransport struct {
	down atomic.Bool
	sent atomic.Int64
}

func (f *flakyTransport) RoundTrip(*http.Request) (*http.Response, error) {
	f.sent.Add(1)
	if f.down.Load() {
		return nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	}
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("{}"))}, nil
}

func TestTheBreakerFailsFastWhileTheClusterIsDownAndClosesOnAnAnswer(t *testing.T) {
	now := time.Unix(1000, 0)
	b := newBreaker("prod-eu", "https://127.0.0.1:6443")
	b.now = func() time.Time { return now }
	changed := make(chan struct{}, 4)
	b.changed = func() { changed <- struct{}{} }
	next := &flakyTransport{}
	rt := b.wrap(next)
	get := func() error {
		req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1:6443/api", nil)
		resp, err := rt.RoundTrip(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}

	next.down.Store(true)
	if err := get(); err == nil {
		t.Fatal("a request to a cluster that is down succeeded")
	}
	<-changed // its Syncs are queued: the cluster stopped answering
	var ue *ClusterUnreachableError
	for range 3 {
		if err := get(); !errors.As(err, &ue) {
			t.Fatalf("error %v, want a ClusterUnreachableError while the breaker is open", err)
		}
	}
	if n := next.sent.Load(); n != 1 {
		t.Errorf("%d requests reached the cluster, want 1: the breaker lets none through until its wait passed", n)
	}
	if !strings.Contains(ue.Error(), "cluster prod-eu (https://127.0.0.1:6443) does not answer") || ue.RetryIn != breakerFirstWait {
		t.Errorf("error %q (retry in %s), want it to name the cluster and retry in %s", ue, ue.RetryIn, breakerFirstWait)
	}

	// The wait doubles with each failure, up to breakerMaxWait.
	for want := 2 * breakerFirstWait; want <= 2*breakerMaxWait; want *= 2 {
		now = now.Add(breakerMaxWait)
		_ = get()
		if err := b.open(); !errors.As(err, &ue) || ue.RetryIn != min(want, breakerMaxWait) {
			t.Fatalf("after another failure: %v, want a wait of %s", err, min(want, breakerMaxWait))
		}
	}

	next.down.Store(false)
	now = now.Add(breakerMaxWait)
	if err := get(); err != nil {
		t.Fatalf("the cluster is back but the request failed: %v", err)
	}
	<-changed // its Syncs are queued again: the cluster answers
	if err := b.open(); err != nil {
		t.Errorf("the breaker stays open after an answer: %v", err)
	}
}
