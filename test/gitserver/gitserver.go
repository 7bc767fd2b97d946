package gitserver

import (
	"bytes"
	"compress/gzip"
	"crypto/subtle"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
)

// Options configures a Server. The zero value serves every repository to anyone.
type Options struct {
	// Username and Password, when Username is set, make the server require HTTP basic
	// authentication with exactly these credentials.
	Username string
	Password string

	// BearerToken, when set, makes the server require "Authorization: Bearer <token>".
	// When both basic credentials and a token are set, either one is accepted, the way a
	// forge accepts a password or a personal access token.
	BearerToken string

	// TLS serves HTTPS with a certificate of a test authority that no client
	// trusts by default; CACert returns the authority for clients that should.
	TLS bool
}

// Requests counts the git requests a server answered, by what they asked for. Tests
// compare two snapshots to prove how a client talks to git, for example that a poll
// of an unchanged branch costs one ref listing and no fetch. Requests refused for
// want of credentials count only as Refused.
type Requests struct {
	// RefListings counts GET /info/refs?service=git-upload-pack: the first request of
	// every clone, fetch and ls-remote, and the whole of a protocol v0/v1 ref listing.
	RefListings int
	// LsRefs counts POST git-upload-pack requests carrying a protocol v2 "ls-refs"
	// command, the second half of a v2 ref listing (the git CLI speaks v2; go-git does
	// not). They are counted apart from Fetches because they transfer no objects.
	LsRefs int
	// Fetches counts POST git-upload-pack requests that negotiate or download objects
	// (v0/v1 want/have negotiation or a v2 "fetch" command).
	Fetches int
	// Pushes counts POST git-receive-pack requests. The Repo helpers push behind the
	// server's back, so only pushes by the code under test appear here.
	Pushes int
	// Refused counts requests answered 401 because credentials were missing or wrong.
	// The git CLI sends its first request without credentials even when it has some,
	// so a successful CLI call counts a refusal too; go-git sends them up front.
	Refused int
}

// Server is a git smart-HTTP server on 127.0.0.1 serving the bare repositories under
// one temporary directory. It is safe for concurrent use by the clients it serves; the
// Repo helpers that write to it are not meant to run concurrently with each other.
type Server struct {
	opts Options
	http *httptest.Server
	root string // GIT_PROJECT_ROOT: bare repositories live at root/<name>.git
	home string // HOME for every git process the server and its helpers start

	mu       gosync.Mutex
	requests map[string]*Requests // by repository name
	traffic  map[string]*Traffic  // by repository name
}

// Traffic counts the bytes of the git requests a server answered, so that a test or
// a benchmark can quote what a poll costs on the wire. It is kept apart from Requests
// so that tests comparing request counts are not disturbed by sizes.
type Traffic struct {
	// Received is the bytes of request bodies (what a fetch sends: wants and haves).
	Received int64
	// Sent is the bytes of response bodies (ref advertisements and packs).
	Sent int64
}

// Start starts a Server for the duration of test t and closes it in t.Cleanup. It
// fails the test if git is not installed.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git server: git CLI not found on PATH: %v", err)
	}
	s := &Server{
		opts:     opts,
		root:     t.TempDir(),
		home:     t.TempDir(),
		requests: map[string]*Requests{},
		traffic:  map[string]*Traffic{},
	}
	backend := &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Dir:  s.root,
		Env: append(gitEnv(s.home),
			"GIT_PROJECT_ROOT="+s.root,
			"GIT_HTTP_EXPORT_ALL=1",
		),
		Stderr: testLogWriter{t: t, prefix: "git http-backend: "},
	}
	handler := s.authenticate(s.count(backend))
	s.http = httptest.NewUnstartedServer(handler)
	// A client that distrusts the test authority is a case tests make on purpose.
	s.http.Config.ErrorLog = log.New(io.Discard, "", 0)
	if opts.TLS {
		s.http.StartTLS()
	} else {
		s.http.Start()
	}
	t.Cleanup(s.http.Close)
	return s
}

// URL returns the clone URL of repository name, for example
// http://127.0.0.1:41234/app.git. The repository need not exist yet.
func (s *Server) URL(name string) string {
	return s.http.URL + "/" + name + ".git"
}

// CACert returns, PEM-encoded, the certificate that signs an HTTPS server's
// certificate (for Options.TLS): what a client's caFile must hold to trust it.
func (s *Server) CACert() []byte {
	cert := s.http.Certificate()
	if cert == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

// Requests returns the requests the server answered so far, summed over all
// repositories.
func (s *Server) Requests() Requests {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum Requests
	for _, r := range s.requests {
		sum.RefListings += r.RefListings
		sum.LsRefs += r.LsRefs
		sum.Fetches += r.Fetches
		sum.Pushes += r.Pushes
		sum.Refused += r.Refused
	}
	return sum
}

// requestsFor returns the counters of one repository.
func (s *Server) requestsFor(name string) Requests {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.requests[name]; ok {
		return *r
	}
	return Requests{}
}

// Traffic returns the bytes the server received and sent so far, summed over all
// repositories.
func (s *Server) Traffic() Traffic {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum Traffic
	for _, t := range s.traffic {
		sum.Received += t.Received
		sum.Sent += t.Sent
	}
	return sum
}

// trafficFor returns the byte counters of one repository.
func (s *Server) trafficFor(name string) Traffic {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.traffic[name]; ok {
		return *t
	}
	return Traffic{}
}

// addTraffic adds the bytes of one request to the repository a path names.
func (s *Server) addTraffic(path string, received, sent int64) {
	name := repoName(path)
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.traffic[name]
	if !ok {
		t = &Traffic{}
		s.traffic[name] = t
	}
	t.Received += received
	t.Sent += sent
}

// record applies f to the counters of the repository a request path names.
func (s *Server) record(path string, f func(*Requests)) {
	name := repoName(path)
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.requests[name]
	if !ok {
		r = &Requests{}
		s.requests[name] = r
	}
	f(r)
}

// authenticate refuses requests without the credentials Options asks for. Git clients
// send credentials only after a 401 with a WWW-Authenticate challenge, so the challenge
// is part of the protocol, not decoration.
func (s *Server) authenticate(next http.Handler) http.Handler {
	if s.opts.Username == "" && s.opts.BearerToken == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.authorized(r) {
			next.ServeHTTP(w, r)
			return
		}
		s.record(r.URL.Path, func(c *Requests) { c.Refused++ })
		if s.opts.Username != "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="gitserver"`)
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gitserver"`)
		}
		http.Error(w, "authentication required", http.StatusUnauthorized)
	})
}

// SetPassword makes the server accept password, and no longer the one before, with
// Options.Username: a rotation of credentials at the git host.
func (s *Server) SetPassword(password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Password = password
}

func (s *Server) authorized(r *http.Request) bool {
	s.mu.Lock()
	password := s.opts.Password
	s.mu.Unlock()
	if s.opts.Username != "" {
		if user, pass, ok := r.BasicAuth(); ok && equal(user, s.opts.Username) && equal(pass, password) {
			return true
		}
	}
	if s.opts.BearerToken != "" {
		if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && equal(token, s.opts.BearerToken) {
			return true
		}
	}
	return false
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// count classifies each authenticated request into the counters before the backend
// answers it. POST bodies are read into memory first: to tell a v2 ls-refs from a
// fetch, and because a fixed Content-Length spares http-backend a chunked body.
func (s *Server) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var received int64
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/info/refs") &&
			r.URL.Query().Get("service") == "git-upload-pack":
			s.record(r.URL.Path, func(c *Requests) { c.RefListings++ })
		case r.Method == http.MethodPost:
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "reading request body: "+err.Error(), http.StatusBadRequest)
				return
			}
			received = int64(len(body))
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			r.TransferEncoding = nil
			switch {
			case strings.HasSuffix(r.URL.Path, "/git-upload-pack") && isLsRefs(body, r.Header.Get("Content-Encoding")):
				s.record(r.URL.Path, func(c *Requests) { c.LsRefs++ })
			case strings.HasSuffix(r.URL.Path, "/git-upload-pack"):
				s.record(r.URL.Path, func(c *Requests) { c.Fetches++ })
			case strings.HasSuffix(r.URL.Path, "/git-receive-pack"):
				s.record(r.URL.Path, func(c *Requests) { c.Pushes++ })
			}
		}
		cw := &countingWriter{ResponseWriter: w}
		next.ServeHTTP(cw, r)
		s.addTraffic(r.URL.Path, received, cw.n)
	})
}

// countingWriter counts the bytes of a response body.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer (to flush).
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// isLsRefs reports whether an upload-pack request body is a protocol v2 ls-refs
// command. Such a body starts with the pkt-line "command=ls-refs\n" (4 hex digits of
// length, then the text); the git CLI gzips bodies it considers large.
func isLsRefs(body []byte, encoding string) bool {
	var head []byte
	if encoding == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return false
		}
		head = make([]byte, 32)
		n, _ := io.ReadFull(zr, head)
		head = head[:n]
	} else {
		head = body[:min(len(body), 32)]
	}
	return len(head) > 4 && bytes.HasPrefix(head[4:], []byte("command=ls-refs"))
}

// repoName extracts "org/app" from "/org/app.git/info/refs".
func repoName(path string) string {
	path = strings.TrimPrefix(path, "/")
	if i := strings.Index(path, ".git/"); i >= 0 {
		return path[:i]
	}
	return strings.TrimSuffix(path, ".git")
}

// bareDir returns where repository name lives on disk.
func (s *Server) bareDir(name string) string {
	return filepath.Join(s.root, filepath.FromSlash(name)+".git")
}

// testLogWriter sends a child process's stderr to the test log, so a backend failure
// shows up next to the test that caused it instead of on the terminal.
type testLogWriter struct {
	t      testing.TB
	prefix string
}

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s%s", w.prefix, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
