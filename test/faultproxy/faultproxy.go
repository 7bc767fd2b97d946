package faultproxy

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	mathrand "math/rand"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"tether.dev/tether/test/selfsigned"
)

// Fault is what the proxy does to a request instead of (or on top of) forwarding it.
type Fault string

// Faults.
const (
	// TooManyRequests answers 429 with Retry-After (Rule.RetryAfter, default 1 s).
	TooManyRequests Fault = "429"
	// InternalError answers 500.
	InternalError Fault = "500"
	// Unavailable answers 503.
	Unavailable Fault = "503"
	// Conflict answers 409, as a write with a stale resourceVersion gets.
	Conflict Fault = "409"
	// Slow forwards the request after Rule.Delay.
	Slow Fault = "slow"
	// Reset closes the connection without an answer.
	Reset Fault = "reset"
	// DropWatch forwards a watch and ends its stream after Rule.Delay (default a
	// random time up to 2 s), as a load balancer or an apiserver restart does.
	DropWatch Fault = "drop-watch"
)

// Rule injects Fault into a share (Rate, 0 to 1) of the requests Match selects.
type Rule struct {
	// Match selects requests; nil matches every request.
	Match      func(*http.Request) bool
	Rate       float64
	Fault      Fault
	Delay      time.Duration
	RetryAfter time.Duration
}

// Entry is one request the proxy saw.
type Entry struct {
	Time   time.Time
	Method string
	Path   string
	Query  string
	// Fault is the fault injected, or "" for a request forwarded as it was.
	Fault Fault
}

// Proxy is a running fault-injecting proxy.
type Proxy struct {
	srv      *httptest.Server
	upstream *httputil.ReverseProxy
	caPEM    []byte

	mu    gosync.Mutex
	rand  *mathrand.Rand
	rules []Rule
	log   []Entry
}

// Start starts a proxy to the apiserver upstream talks to, with faults chosen from
// seed, until the test ends. It starts with no rule: every request is forwarded.
func Start(t testing.TB, upstream *rest.Config, seed int64) *Proxy {
	t.Helper()
	transport, err := rest.TransportFor(upstream)
	if err != nil {
		t.Fatalf("fault proxy: upstream transport: %v", err)
	}
	target, err := url.Parse(upstream.Host)
	if err != nil {
		t.Fatalf("fault proxy: upstream host %q: %v", upstream.Host, err)
	}
	p := &Proxy{rand: mathrand.New(mathrand.NewSource(seed))} //nolint:gosec // deterministic faults, not security
	p.upstream = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Header.Del("Authorization") // the upstream transport authenticates as the admin
		},
		Transport:     transport,
		FlushInterval: -1, // stream watches as they come
	}
	caPEM, cert, err := selfsigned.Loopback("tether-fault-proxy")
	if err != nil {
		t.Fatalf("fault proxy: certificate: %v", err)
	}
	p.caPEM = caPEM
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(p.serve))
	p.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	p.srv.StartTLS()
	t.Cleanup(p.srv.Close)
	return p
}

// SetRules replaces the rules; no rule forwards everything.
func (p *Proxy) SetRules(rules ...Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = rules
}

// Log returns the requests seen so far.
func (p *Proxy) Log() []Entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Entry(nil), p.log...)
}

// Config returns a client configuration that talks to the apiserver through the proxy.
func (p *Proxy) Config() *rest.Config {
	return &rest.Config{Host: p.srv.URL, BearerToken: "through-the-fault-proxy", TLSClientConfig: rest.TLSClientConfig{CAData: p.caPEM}}
}

// Kubeconfig writes a kubeconfig for Config into dir and returns its path, for a
// process such as the tether binary.
func (p *Proxy) Kubeconfig(t testing.TB, dir string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: p.srv.URL, CertificateAuthorityData: p.caPEM}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{Token: "through-the-fault-proxy"}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	cfg.CurrentContext = "proxy"
	path := filepath.Join(dir, "fault-proxy.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatalf("fault proxy: writing kubeconfig: %v", err)
	}
	return path
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	rule := p.choose(r)
	switch rule.Fault {
	case "":
		p.upstream.ServeHTTP(w, r)
	case TooManyRequests:
		after := rule.RetryAfter
		if after <= 0 {
			after = time.Second
		}
		w.Header().Set("Retry-After", fmt.Sprint(int(after.Seconds())))
		status(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "fault proxy: too many requests")
	case InternalError:
		status(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "fault proxy: internal error")
	case Unavailable:
		status(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "fault proxy: unavailable")
	case Conflict:
		status(w, http.StatusConflict, metav1.StatusReasonConflict, "fault proxy: the object has been modified; please apply your changes to the latest version and try again")
	case Slow:
		time.Sleep(rule.Delay)
		p.upstream.ServeHTTP(w, r)
	case Reset:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				if tcp, ok := conn.(interface{ SetLinger(int) error }); ok {
					_ = tcp.SetLinger(0)
				}
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	case DropWatch:
		p.dropLater(w, r, rule.Delay)
	}
}

// choose logs r and picks the fault of the first rule that matches it and fires.
func (p *Proxy) choose(r *http.Request) Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	var chosen Rule
	for _, rule := range p.rules {
		if rule.Fault == DropWatch && r.URL.Query().Get("watch") != "true" {
			continue
		}
		if (rule.Match == nil || rule.Match(r)) && p.rand.Float64() < rule.Rate {
			chosen = rule
			break
		}
	}
	if chosen.Fault == DropWatch && chosen.Delay <= 0 {
		chosen.Delay = time.Duration(p.rand.Int63n(int64(2 * time.Second)))
	}
	p.log = append(p.log, Entry{Time: time.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Fault: chosen.Fault})
	return chosen
}

// dropLater forwards a watch and cuts it after d.
func (p *Proxy) dropLater(w http.ResponseWriter, r *http.Request, d time.Duration) {
	ctx, cancel := context.WithTimeout(r.Context(), d)
	defer cancel()
	p.upstream.ServeHTTP(w, r.WithContext(ctx))
}

func status(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(&metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg,
	})
}

// Writes returns the requests of the log that write (POST, PUT, PATCH, DELETE)
// without a dryRun, forwarded to the apiserver.
func Writes(log []Entry) []Entry {
	var out []Entry
	for _, e := range log {
		if e.Fault != "" && e.Fault != Slow && e.Fault != DropWatch {
			continue
		}
		if e.Method == http.MethodGet || strings.Contains(e.Query, "dryRun=") {
			continue
		}
		out = append(out, e)
	}
	return out
}

// IsStatusWrite matches writes to a status subresource.
func IsStatusWrite(r *http.Request) bool {
	return (r.Method == http.MethodPatch || r.Method == http.MethodPut) && strings.HasSuffix(r.URL.Path, "/status")
}
