package ociregistry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	gosync "sync"
	"syscall"
	"testing"
	"time"

	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// Media types of a chart as Helm pushes it.
const (
	ManifestType   = "application/vnd.oci.image.manifest.v1+json"
	ChartLayerType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	ConfigType     = "application/vnd.cncf.helm.config.v1+json"
)

// RefusalBody is what the proxy answers a request without the credentials it
// requires, and what its token endpoint answers wrong credentials: words no
// error of the agent may quote.
const RefusalBody = "registry-refusal-body: do not quote me"

// Server is a registry on loopback behind a counting proxy.
type Server struct {
	// Repository is the agent's spec.source.chart.repository for charts pushed
	// here: oci://<proxy host>/charts.
	Repository string
	// registry is the registry's own base URL (pushes go there, uncounted).
	registry string
	proxy    *httptest.Server

	mu       gosync.Mutex
	requests map[string]int
	user     string
	password string
	token    string
	pageSize int
	// refreshToken is the OAuth2 refresh token the token endpoint takes, when
	// not "" (AcceptRefreshToken).
	refreshToken string
	// corrupt makes the proxy flip a byte of every blob it answers.
	corrupt bool
}

// Start runs a registry until the test ends, waits until /v2/ answers, and
// starts the proxy in front of it.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t, "")
}

// StartNotifying is Start with the registry's notifications (Distribution's
// notifications endpoints) sent to endpoint with the header Authorization:
// authorization: an event per push, as a registry in front of a CI tells a
// webhook receiver.
func StartNotifying(t testing.TB, endpoint, authorization string) *Server {
	t.Helper()
	return start(t, fmt.Sprintf("notifications:\n  endpoints:\n    - name: tether\n      url: %s\n      headers:\n        Authorization: [%q]\n      timeout: 2s\n      threshold: 3\n      backoff: 200ms\n", endpoint, authorization))
}

func start(t testing.TB, extra string) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the registry that `make testbin` builds; skipped with -short")
	}
	bin := binary(t)
	dir := t.TempDir()
	addr := harness.FreeAddr(t)
	config := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n", filepath.Join(dir, "data"), addr) + extra
	path := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	log := &harness.Buffer{}
	cmd := exec.Command(bin, "serve", path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none", "OTEL_SDK_DISABLED=true")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the registry: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			t.Logf("the registry stopped: %v", err)
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Logf("the registry did not stop within 30s of SIGTERM, killed: %v", <-done)
		}
		if t.Failed() {
			t.Logf("registry log:\n%s", log.String())
		}
	})
	s := &Server{registry: "http://" + addr, requests: map[string]int{}}
	s.waitReady(t, done)
	target, err := url.Parse(s.registry)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = s.modify
	s.proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, rp) }))
	t.Cleanup(s.proxy.Close)
	s.Repository = "oci://" + strings.TrimPrefix(s.proxy.URL, "http://") + "/charts"
	return s
}

// binary is the registry's path in the test binaries' directory.
func binary(t testing.TB) string {
	t.Helper()
	dir, err := controlplane.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "registry")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the registry is not built (run `make testbin`, or hack/testbin.sh %s): %v", dir, err)
	}
	return path
}

// readyTimeout bounds the registry's start (well under a second when idle).
const readyTimeout = time.Minute

// waitReady waits until the registry answers /v2/ (its log is printed by the
// cleanup if the test fails), and fails at once if it exits first.
func (s *Server) waitReady(t testing.TB, done chan error) {
	t.Helper()
	harness.Eventually(t, readyTimeout, "the registry answers /v2/", func(ctx context.Context) (bool, error) {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("the registry exited before it answered: %v", err)
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.registry+"/v2/", nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// serve counts r by kind ("tags", "manifests", "blobs", "token"), answers the
// token endpoint, checks credentials when required, and forwards the rest.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, rp *httputil.ReverseProxy) {
	s.mu.Lock()
	s.requests[kind(r.URL.Path)]++
	user, password, token, pageSize := s.user, s.password, s.token, s.pageSize
	s.mu.Unlock()
	if pageSize > 0 && kind(r.URL.Path) == "tags" && r.URL.Query().Get("n") == "" {
		q := r.URL.Query()
		q.Set("n", strconv.Itoa(pageSize))
		r.URL.RawQuery = q.Encode()
	}
	if r.URL.Path == "/token" && r.Method == http.MethodPost {
		s.serveOAuth2(w, r)
		return
	}
	if r.URL.Path == "/token" {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			http.Error(w, RefusalBody, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"token": token, "expires_in": 300})
		return
	}
	if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="ociregistry",scope="repository:%s:pull"`, s.proxy.URL, repoOf(r.URL.Path)))
		http.Error(w, RefusalBody, http.StatusUnauthorized)
		return
	}
	rp.ServeHTTP(w, r)
}

// serveOAuth2 answers an OAuth2 refresh token grant (a POST to the token
// endpoint, as oras-go sends a docker config's identitytoken) with the token,
// when the refresh token is the one AcceptRefreshToken set.
func (s *Server) serveOAuth2(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	refresh, token := s.refreshToken, s.token
	s.mu.Unlock()
	if err := r.ParseForm(); err != nil || refresh == "" || r.PostForm.Get("grant_type") != "refresh_token" || r.PostForm.Get("refresh_token") != refresh {
		http.Error(w, RefusalBody, http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": token, "expires_in": 300})
}

// AcceptRefreshToken makes the token endpoint give its token, from now on,
// for an OAuth2 refresh token grant of refreshToken too (RequireToken first).
func (s *Server) AcceptRefreshToken(refreshToken string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshToken = refreshToken
}

// CorruptBlobs makes the proxy flip the first byte of every blob it answers,
// from now on: the answer keeps its length and its Docker-Content-Digest
// header, and its content no longer matches its digest.
func (s *Server) CorruptBlobs() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.corrupt = true
}

// modify flips a blob answer's first byte when CorruptBlobs asked for it.
func (s *Server) modify(resp *http.Response) error {
	s.mu.Lock()
	corrupt := s.corrupt
	s.mu.Unlock()
	if !corrupt || resp.StatusCode != http.StatusOK || kind(resp.Request.URL.Path) != "blobs" {
		return nil
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		return err
	}
	_ = resp.Body.Close()
	data := b.Bytes()
	if len(data) > 0 {
		data[0] ^= 0xff
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	return nil
}

// RequireToken makes the proxy refuse, from now on, every request without a
// token, which its token endpoint gives for username and password.
func (s *Server) RequireToken(username, password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.user, s.password = username, password
	sum := sha256.Sum256([]byte(username + ":" + password))
	s.token = hex.EncodeToString(sum[:8])
}

// Token is the token RequireToken made: what the token endpoint gives, and
// what a client may send as it is (a registry token).
func (s *Server) Token() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token
}

// PageTags makes the proxy ask the registry for tag lists of n tags a page
// (the registry then links the next page), from now on.
func (s *Server) PageTags(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageSize = n
}

// Requests counts the requests of a kind so far: "tags" (tag lists),
// "manifests", "blobs", "token".
func (s *Server) Requests(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[kind]
}

func kind(path string) string {
	for _, k := range []string{"tags", "manifests", "blobs"} {
		if strings.Contains(path, "/"+k+"/") {
			return k
		}
	}
	return strings.Trim(path, "/")
}

func repoOf(path string) string {
	repo := strings.TrimPrefix(path, "/v2/")
	for _, k := range []string{"/tags/", "/manifests/", "/blobs/"} {
		if i := strings.LastIndex(repo, k); i >= 0 {
			return repo[:i]
		}
	}
	return repo
}

// Descriptor is a blob as a manifest names it.
type Descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

// Push pushes pkg (a chart package) as Helm pushes chart name at version:
// to repository charts/<name>, tagged version with "+" written "_".
func (s *Server) Push(t testing.TB, name, version string, pkg []byte) {
	t.Helper()
	layer := s.PushBlob(t, name, ChartLayerType, pkg)
	s.PushManifest(t, name, version, layer)
}

// PushBlob uploads data to charts/<name> (one monolithic upload) and returns
// its descriptor with mediaType.
func (s *Server) PushBlob(t testing.TB, name, mediaType string, data []byte) Descriptor {
	t.Helper()
	sum := sha256.Sum256(data)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	resp := s.do(t, http.MethodPost, s.registry+"/v2/charts/"+name+"/blobs/uploads/", "", nil, http.StatusAccepted)
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse(s.registry)
	u := base.ResolveReference(loc)
	q := u.Query()
	q.Set("digest", digest)
	u.RawQuery = q.Encode()
	s.do(t, http.MethodPut, u.String(), "application/octet-stream", data, http.StatusCreated)
	return Descriptor{MediaType: mediaType, Digest: digest, Size: int64(len(data))}
}

// PushManifest pushes a manifest of layers (and Helm's config) tagged
// version ("+" written "_") to charts/<name>.
func (s *Server) PushManifest(t testing.TB, name, version string, layers ...Descriptor) {
	t.Helper()
	config := s.PushBlob(t, name, ConfigType, []byte(fmt.Sprintf(`{"name":%q,"version":%q,"apiVersion":"v2"}`, name, version)))
	manifest, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": ManifestType, "config": config, "layers": layers})
	if err != nil {
		t.Fatal(err)
	}
	tag := strings.ReplaceAll(version, "+", "_")
	s.do(t, http.MethodPut, s.registry+"/v2/charts/"+name+"/manifests/"+tag, ManifestType, manifest, http.StatusCreated)
}

func (s *Server) do(t testing.TB, method, u, contentType string, body []byte, want int) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != want {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		t.Fatalf("%s %s: %s (want %d): %.500s", method, u, resp.Status, want, b.String())
	}
	return resp
}
