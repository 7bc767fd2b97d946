package notify

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tether.dev/tether/api/v1alpha1"
)

func TestSendRetriesServerErrorsThenDeliversOnce(t *testing.T) {
	var attempts atomic.Int32
	srv, got := receiver(t, func(n int) int {
		attempts.Store(int32(n))
		if n <= 3 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	status, err := fastSender(t).Send(t.Context(), mustChat(t, srv.URL))
	if err != nil || status != http.StatusOK {
		t.Fatalf("Send = %d, %v", status, err)
	}
	if attempts.Load() != 4 || len(got) != 1 {
		t.Errorf("%d attempts, %d delivered; want 4 attempts (500 three times, then 200) and one delivery", attempts.Load(), len(got))
	}
}

func TestSendGivesUpOnAClientErrorAtOnce(t *testing.T) {
	srv, _ := receiver(t, func(int) int { return http.StatusNotFound })
	_, err := fastSender(t).Send(t.Context(), mustChat(t, srv.URL+"/secret-token-in-path"))
	var de *DeliveryError
	if !errors.As(err, &de) || de.Status != http.StatusNotFound || de.Attempts != 1 {
		t.Fatalf("err = %#v", err)
	}
	if strings.Contains(err.Error(), "secret-token-in-path") || strings.Contains(err.Error(), srv.URL) {
		t.Errorf("the error shows the address: %v", err)
	}
}

func TestSendNeverReachesAHostNotAllowed(t *testing.T) {
	srv, got := receiver(t, nil)
	o := DefaultSenderOptions()
	o.AllowedHosts = []string{"hooks.slack.com", "*.corp.example"}
	s, err := NewSender(o, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(t.Context(), mustChat(t, srv.URL)); err == nil {
		t.Fatal("sent to 127.0.0.1")
	}
	select {
	case <-got:
		t.Fatal("the receiver got the message")
	default:
	}
	for host, want := range map[string]bool{"hooks.slack.com": true, "a.corp.example": true, "corp.example": false, "evil.com": false, "HOOKS.SLACK.COM": true} {
		if o.HostAllowed(host) != want {
			t.Errorf("HostAllowed(%q) = %v", host, !want)
		}
	}
}

func TestRetryAfterIsHonouredWithinItsBound(t *testing.T) {
	s := &Sender{opts: SenderOptions{MaxRetryAfter: time.Minute}}
	for v, want := range map[string]time.Duration{"": 0, "3": 3 * time.Second, "3600": time.Minute, "-1": 0, "soon": 0} {
		if got := s.retryAfter(v); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", v, got, want)
		}
	}
	if got := s.retryAfter(time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)); got != time.Minute {
		t.Errorf("an HTTP date an hour ahead waits %v", got)
	}
}

func mustChat(t *testing.T, url string) Request {
	t.Helper()
	req, err := ChatRequest(Receiver{Type: v1alpha1.NotifierGeneric, Address: url}, Message{Events: []Event{failedEvent()}})
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// staticTarget delivers to one receiver and hands outcomes to a channel.
type staticTarget struct {
	r        Receiver
	s        *Sender
	outcomes chan Outcome
}

func (st *staticTarget) Resolve(context.Context) (Receiver, *Sender, error) { return st.r, st.s, nil }
func (st *staticTarget) Report(_ context.Context, o Outcome)                { st.outcomes <- o }

func newStaticTarget(t *testing.T, url string, opts SenderOptions) *staticTarget {
	s, err := NewSender(opts, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	return &staticTarget{r: Receiver{Type: v1alpha1.NotifierGeneric, Address: url}, s: s, outcomes: make(chan Outcome, 2000)}
}

// refusing stands for the transport the agent puts in http.DefaultTransport so
// that rendering cannot reach the network (source.IsolateRendering).
type refusing struct{}

func (refusing) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("the default transport was used")
}

// The agent's http.DefaultTransport refuses every request and is no
// *http.Transport: a Sender brings its own, and delivers.
func TestASenderDoesNotUseTheDefaultTransport(t *testing.T) {
	srv, got := receiver(t, nil)
	before := http.DefaultTransport
	http.DefaultTransport = refusing{}
	t.Cleanup(func() { http.DefaultTransport = before })
	status, err := fastSender(t).Send(t.Context(), mustChat(t, srv.URL))
	if err != nil || status != http.StatusOK {
		t.Fatalf("Send = %d, %v", status, err)
	}
	one(t, got)
}

// TestSendGoesThroughTheNotifiersProxy: a proxy from the Notifier's Secret
// carries the request; one whose host notifications may not reach is refused
// before anything is sent.
func TestSendGoesThroughTheNotifiersProxy(t *testing.T) {
	var asked atomic.Value
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Store(r.URL.String())
	}))
	t.Cleanup(proxy.Close)
	s, err := NewSender(DefaultSenderOptions(), nil, proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	if status, err := s.Send(t.Context(), mustChat(t, "http://hooks.example.invalid/hook")); err != nil || status != http.StatusOK {
		t.Fatalf("Send = %d, %v", status, err)
	}
	if got, _ := asked.Load().(string); got != "http://hooks.example.invalid/hook" {
		t.Errorf("the proxy was asked for %q; want the receiver's address", got)
	}

	o := DefaultSenderOptions()
	o.AllowedHosts = []string{"hooks.example.invalid"}
	if _, err := NewSender(o, nil, proxy.URL); err == nil {
		t.Error("a proxy on a host notifications may not reach was taken")
	}
}
