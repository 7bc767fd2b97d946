package chartrepo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	gosync "sync"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	sigsyaml "sigs.k8s.io/yaml"
)

// RefusalBody is what the server answers a request without the credentials it
// requires: text the agent must never quote.
const RefusalBody = "repository says: secret-refusal-text-never-quoted"

// Options configure a Server.
type Options struct {
	// Username and Password, when set, are required (basic authentication) of
	// every request; others get 401 with RefusalBody.
	Username, Password string
}

// Server is a chart repository on loopback.
type Server struct {
	// URL is the repository's URL (no trailing slash).
	URL string

	opts     Options
	mu       gosync.Mutex
	packages map[string][]byte // by file name
	entries  map[string][]indexEntry
	index    []byte // a raw index that replaces the built one, when set
	requests map[string]int
}

type indexEntry struct {
	APIVersion string   `json:"apiVersion"`
	Name       string   `json:"name"`
	Version    string   `json:"version"`
	URLs       []string `json:"urls"`
	Digest     string   `json:"digest"`
	Created    string   `json:"created"`
}

// Start starts a chart repository on loopback, stopped when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{opts: opts, packages: map[string][]byte{}, entries: map[string][]indexEntry{}, requests: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests[r.URL.Path]++
	want := s.opts
	s.mu.Unlock()
	if want.Username != "" {
		user, pass, ok := r.BasicAuth()
		if !ok || user != want.Username || pass != want.Password {
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, RefusalBody, http.StatusUnauthorized)
			return
		}
	}
	if r.URL.Path == "/index.yaml" {
		index := s.Index()
		// As a static server (GitHub Pages, a bucket) announces it.
		w.Header().Set("Content-Length", strconv.Itoa(len(index)))
		_, _ = w.Write(index)
		return
	}
	s.mu.Lock()
	data, ok := s.packages[filepath.Base(r.URL.Path)]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(data)
}

// RequireBasicAuth makes the server refuse, from now on, every request
// without these credentials (401 with RefusalBody).
func (s *Server) RequireBasicAuth(username, password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Username, s.opts.Password = username, password
}

// Requests counts the requests of path ("/index.yaml") so far.
func (s *Server) Requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path]
}

// Chart loads a chart the project wrote, from this package's testdata.
func Chart(t testing.TB, name string) *chart.Chart {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	c, err := loader.LoadDir(filepath.Join(filepath.Dir(file), "testdata", name))
	if err != nil {
		t.Fatalf("loading chart %s: %v", name, err)
	}
	return c
}

// ChartOf loads a chart from its files, named relative to its directory
// ("Chart.yaml", "templates/web.yaml"), as a test writes them.
func ChartOf(t testing.TB, files map[string]string) *chart.Chart {
	t.Helper()
	var buffered []*archive.BufferedFile
	for name, content := range files {
		buffered = append(buffered, &archive.BufferedFile{Name: name, Data: []byte(content)})
	}
	c, err := loader.LoadFiles(buffered)
	if err != nil {
		t.Fatalf("loading a chart of %d files: %v", len(files), err)
	}
	return c
}

// Package packages c at version with the Helm SDK's packager (chartutil.Save)
// and returns the package's bytes.
func Package(t testing.TB, c *chart.Chart, version string) []byte {
	t.Helper()
	md := *c.Metadata
	md.Version = version
	cc := *c
	cc.Metadata = &md
	file, err := chartutil.Save(&cc, t.TempDir())
	if err != nil {
		t.Fatalf("packaging %s %s: %v", md.Name, version, err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Publish packages c at version and lists it in the index.
func (s *Server) Publish(t testing.TB, c *chart.Chart, version string) {
	t.Helper()
	s.PublishPackage(c.Name(), version, Package(t, c, version))
}

// PublishPackage lists data as the package of name at version, with its
// SHA-256 in the index, whatever data holds (hostile packages).
func (s *Server) PublishPackage(name, version string, data []byte) {
	sum := sha256.Sum256(data)
	file := fmt.Sprintf("%s-%s.tgz", name, version)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.packages[file] = data
	s.entries[name] = append(s.entries[name], indexEntry{
		APIVersion: "v2", Name: name, Version: version, URLs: []string{file},
		Digest: hex.EncodeToString(sum[:]), Created: time.Now().UTC().Format(time.RFC3339Nano),
	})
}

// SetIndex makes the server answer index.yaml with data (nil: the index of
// what was published).
func (s *Server) SetIndex(data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.index = data
}

// Index is the index.yaml the server answers, written as `helm repo index`
// writes one: entries by chart, newest version first.
func (s *Server) Index() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.index != nil {
		return s.index
	}
	entries := map[string][]indexEntry{}
	for name, versions := range s.entries {
		sorted := append([]indexEntry(nil), versions...)
		sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Version > sorted[j].Version })
		entries[name] = sorted
	}
	data, err := sigsyaml.Marshal(map[string]any{"apiVersion": "v1", "entries": entries, "generated": time.Now().UTC().Format(time.RFC3339Nano)})
	if err != nil {
		panic(err) // a map of strings always marshals
	}
	return data
}
