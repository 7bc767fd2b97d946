package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/rest"

	"tether.dev/tether/test/controlplane"
)

func TestBearerToken(t *testing.T) {
	for _, c := range []struct {
		header, want string
		ok           bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"  BEARER   abc  ", "abc", true},
		{"", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Basic dXNlcjpwdw==", "", false},
		{"Bearer a b", "", false},
		{"abc", "", false},
	} {
		got, ok := bearerToken(c.header)
		if got != c.want || ok != c.ok {
			t.Errorf("bearerToken(%q) = %q, %v; want %q, %v", c.header, got, ok, c.want, c.ok)
		}
	}
}

// TestMetricsAuthRemembersWithinItsBound fills the answers past MaxEntries: the
// expired ones go first, then all, and the map never holds more than the bound.
func TestMetricsAuthRemembersWithinItsBound(t *testing.T) {
	now := time.Unix(1000, 0)
	a := &metricsAuth{opts: metricsAuthOptions{AllowTTL: time.Minute, DenyTTL: time.Second, MaxEntries: 3}, now: func() time.Time { return now }, answers: map[metricsAuthKey]metricsAnswer{}}
	key := func(i byte) metricsAuthKey { return metricsAuthKey{token: [32]byte{i}, verb: "get", path: "/metrics"} }
	a.remember(key(1), a.answer(http.StatusForbidden, "u1"))
	a.remember(key(2), a.answer(http.StatusOK, "u2"))
	a.remember(key(3), a.answer(http.StatusOK, "u3"))
	now = now.Add(2 * time.Second) // u1's refusal expires
	if _, ok := a.cached(key(1)); ok {
		t.Error("an expired refusal was answered from memory")
	}
	a.remember(key(4), a.answer(http.StatusOK, "u4"))
	if _, ok := a.cached(key(2)); !ok || len(a.answers) != 3 {
		t.Errorf("after dropping the expired answer: %d answers, u2 kept %v; want 3, true", len(a.answers), ok)
	}
	a.remember(key(5), a.answer(http.StatusOK, "u5"))
	if len(a.answers) > 3 {
		t.Errorf("%d answers held, bound 3", len(a.answers))
	}
	if got, ok := a.cached(key(5)); !ok || got.user != "u5" {
		t.Errorf("the newest answer = %+v, %v; want u5's", got, ok)
	}
}

// reviewCounter counts the review requests a client sends to the API server.
type reviewCounter struct {
	next                      http.RoundTripper
	tokenReviews, accessRevws atomic.Int32
}

func (c *reviewCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	switch {
	case strings.HasSuffix(req.URL.Path, "/tokenreviews"):
		c.tokenReviews.Add(1)
	case strings.HasSuffix(req.URL.Path, "/subjectaccessreviews"):
		c.accessRevws.Add(1)
	}
	return c.next.RoundTrip(req)
}

// TestMetricsAuthFilter puts the filter of --metrics-secure in front of a handler,
// running as an account that holds only the install's tether-metrics-auth role
// against the real API server, and sends it scrapes as Prometheus would.
func TestMetricsAuthFilter(t *testing.T) {
	cfg := controlplane.Shared(t).Config()
	ns, agentToken, readerToken, strangerToken := metricsAccounts(t, cfg)

	agentCfg := rest.AnonymousClientConfig(cfg)
	agentCfg.BearerToken = agentToken
	httpClient, err := rest.HTTPClientFor(agentCfg)
	if err != nil {
		t.Fatal(err)
	}
	counter := &reviewCounter{next: httpClient.Transport}
	httpClient.Transport = counter
	// Answers held an hour, so that no step depends on how fast a loaded machine runs.
	opts := defaultMetricsAuthOptions()
	opts.AllowTTL, opts.DenyTTL = time.Hour, time.Hour
	filter, err := metricsAuthFilter(opts)(agentCfg, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	var served atomic.Int32
	handler, err := filter(logs.logger(), http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		served.Add(1)
		if req.Header.Get("Authorization") != "" {
			t.Error("the metrics handler was handed the scraper's token")
		}
		_, _ = w.Write([]byte("tether_up 1\n"))
	}))
	if err != nil {
		t.Fatal(err)
	}
	scrape := func(method, token string) int {
		req := httptest.NewRequestWithContext(t.Context(), method, "/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec.Code
	}

	for _, c := range []struct {
		step, method, token string
		want                int
	}{
		{"a scrape without a token is refused", http.MethodGet, "", http.StatusUnauthorized},
		{"a scrape with a garbage token is refused", http.MethodGet, "garbage." + ns, http.StatusUnauthorized},
		{"an account without tether-metrics-reader is refused", http.MethodGet, strangerToken, http.StatusForbidden},
		{"an account bound to tether-metrics-reader reads the metrics", http.MethodGet, readerToken, http.StatusOK},
		{"the reader may get, not post (the verb is the lowercased method)", http.MethodPost, readerToken, http.StatusForbidden},
	} {
		t.Run(c.step, func(t *testing.T) {
			if got := scrape(c.method, c.token); got != c.want {
				t.Errorf("status = %d, want %d", got, c.want)
			}
		})
	}
	if got := served.Load(); got != 1 {
		t.Errorf("the metrics handler served %d scrapes, want 1 (the reader's)", got)
	}

	t.Run("repeated scrapes are answered from memory, without a review", func(t *testing.T) {
		tr, sar := counter.tokenReviews.Load(), counter.accessRevws.Load()
		for range 3 {
			for token, want := range map[string]int{readerToken: http.StatusOK, strangerToken: http.StatusForbidden, "garbage." + ns: http.StatusUnauthorized} {
				if got := scrape(http.MethodGet, token); got != want {
					t.Errorf("status = %d, want %d", got, want)
				}
			}
		}
		if dt, ds := counter.tokenReviews.Load()-tr, counter.accessRevws.Load()-sar; dt != 0 || ds != 0 {
			t.Errorf("9 repeated scrapes cost %d TokenReviews and %d SubjectAccessReviews, want none", dt, ds)
		}
	})
	t.Run("no token is logged", func(t *testing.T) {
		for _, token := range []string{readerToken, strangerToken, agentToken} {
			if strings.Contains(logs.String(), token) {
				t.Error("a token appears in the logs")
			}
		}
	})
}

// TestMetricsAuthFilterReportsAnUnreachableAPIServer: when the reviews cannot be
// made, the scrape gets a 500 and nothing is remembered.
func TestMetricsAuthFilterReportsAnUnreachableAPIServer(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	cfg := &rest.Config{Host: down.URL}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	filter, err := metricsAuthFilter(defaultMetricsAuthOptions())(cfg, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	handler, err := filter(logr.Discard(), http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/metrics", nil)
		req.Header.Set("Authorization", "Bearer some-token")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusInternalServerError {
			t.Errorf("status = %d, want 500", rec.Code)
		}
	}
}

// logBuffer collects a logger's lines, at every verbosity.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.buf.WriteString(prefix + args + "\n")
	}, funcr.Options{Verbosity: 10})
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
