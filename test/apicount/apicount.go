// Package apicount counts the requests a client sends to the Kubernetes API server,
// by kind of request, so that tests and benchmarks can state what an operation costs:
// "a converged resync makes zero writes and zero dry-runs".
//
// Wrap a rest.Config with Counter.Wrap and build clients from the copy; every request
// they send is counted before it leaves.
package apicount

import (
	"net/http"
	"strings"
	gosync "sync"

	"k8s.io/client-go/rest"
)

// Kinds of request, as Counts keys.
const (
	Get    = "get"    // GET of one object
	List   = "list"   // GET of a collection
	Watch  = "watch"  // GET ?watch=true
	DryRun = "dryrun" // any write with ?dryRun=All
	Patch  = "patch"  // PATCH (server-side apply included), not dry-run
	Create = "create" // POST, not dry-run
	Update = "update" // PUT, not dry-run
	Delete = "delete" // DELETE, not dry-run
)

// Counts maps a kind of request to how many were sent.
type Counts map[string]int

// Writes is the number of requests that changed something.
func (c Counts) Writes() int { return c[Patch] + c[Create] + c[Update] + c[Delete] }

// Counter counts requests. The zero value is ready to use.
type Counter struct {
	mu      gosync.Mutex
	counts  Counts
	paths   map[string]int // by kind and URL path, for Paths
	log     []string       // "kind path", in the order sent
	accepts []string       // "kind accept", in the order sent
}

// Wrap returns a copy of cfg whose requests c counts.
func (c *Counter) Wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			c.count(req)
			return rt.RoundTrip(req)
		})
	})
	return out
}

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := Counts{}
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// Paths returns how many requests of kind went to each URL path so far, e.g.
// "/api/v1/namespaces/web/configmaps/settings": 1.
func (c *Counter) Paths(kind string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.paths {
		if p, ok := strings.CutPrefix(k, kind+" "); ok {
			out[p] = v
		}
	}
	return out
}

// Log returns the URL paths of the requests of kind so far, in the order sent.
func (c *Counter) Log(kind string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ofKind(c.log, kind)
}

// Accepts returns the Accept headers of the requests of kind so far, in the order
// sent: what answer each asked for.
func (c *Counter) Accepts(kind string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ofKind(c.accepts, kind)
}

// ofKind returns what follows "kind " in the entries ("kind value") of kind, in
// order.
func ofKind(entries []string, kind string) []string {
	var out []string
	for _, entry := range entries {
		if v, ok := strings.CutPrefix(entry, kind+" "); ok {
			out = append(out, v)
		}
	}
	return out
}

// Reset forgets every count.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts, c.paths, c.log, c.accepts = nil, nil, nil, nil
}

func (c *Counter) count(req *http.Request) {
	kind := classify(req)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts, c.paths = Counts{}, map[string]int{}
	}
	c.counts[kind]++
	c.paths[kind+" "+req.URL.Path]++
	c.log = append(c.log, kind+" "+req.URL.Path)
	c.accepts = append(c.accepts, kind+" "+req.Header.Get("Accept"))
}

// classify names the kind of one request. A GET is a get when its path names one
// object; collections have an even number of segments after the group version
// ("/api/v1/namespaces/ns/configmaps") and objects an odd one.
func classify(req *http.Request) string {
	q := req.URL.Query()
	if q.Get("dryRun") != "" {
		return DryRun
	}
	switch req.Method {
	case http.MethodGet:
		if q.Get("watch") == "true" || q.Get("watch") == "1" {
			return Watch
		}
		if isCollection(req.URL.Path) {
			return List
		}
		return Get
	case http.MethodPatch:
		return Patch
	case http.MethodPost:
		return Create
	case http.MethodPut:
		return Update
	case http.MethodDelete:
		return Delete
	}
	return strings.ToLower(req.Method)
}

func isCollection(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:] // api/v1/...
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:] // apis/group/version/...
	default:
		return true // discovery and the like
	}
	// A group version's own path ("/api/v1", "/apis/apps/v1") is discovery, not an
	// object.
	return len(rest) == 0 || len(rest)%2 == 1
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
