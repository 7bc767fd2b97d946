package promserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// Binary returns the path of name (prometheus or promtool): in
// $TETHER_PROMETHEUS_DIR when set (make test-prometheus3 points it at v3 built
// from source), else in the test binaries' directory, where make test links
// Debian's (hack/prometheus.sh). A missing one fails the test, saying how to
// get it.
func Binary(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv("TETHER_PROMETHEUS_DIR")
	if dir == "" {
		var err error
		if dir, err = controlplane.BinDir(); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is missing (run `make prometheus`, or hack/prometheus.sh %s): %v", name, dir, err)
	}
	return path
}

// Options configure a Server.
type Options struct {
	// Targets are the host:port addresses whose /metrics the server scrapes, as one
	// job named "tether".
	Targets []string
	// RuleFiles are rule files the server loads.
	RuleFiles []string
	// Interval is both the scrape and the rule evaluation interval; zero means
	// DefaultInterval.
	Interval time.Duration
}

// DefaultInterval is the scrape and evaluation interval of a Server started with
// none: a second, the finest the tests' waits need (Prometheus's HTTP API and a
// poll of it each take milliseconds; the agent's state changes in seconds).
const DefaultInterval = time.Second

// Server is a running Prometheus.
type Server struct {
	// URL is the server's base URL (http://127.0.0.1:port).
	URL  string
	api  promv1.API
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan error
}

// Start runs Prometheus with opts until the test ends, and waits until it is ready.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, configFile(opts), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := harness.FreeAddr(t)
	s := &Server{URL: "http://" + addr, log: &bytes.Buffer{}, done: make(chan error, 1)}
	s.cmd = exec.Command(Binary(t, "prometheus"),
		"--config.file="+config,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting prometheus: %v", err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() { s.stop(t) })

	client, err := promapi.NewClient(promapi.Config{Address: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	s.api = promv1.NewAPI(client)
	s.waitReady(t)
	return s
}

// configFile is the server's configuration: one scrape job over opts.Targets with
// honor_labels, as deploy/monitoring's ServiceMonitor scrapes, and opts.RuleFiles.
func configFile(opts Options) []byte {
	interval := model.Duration(opts.Interval).String()
	config := map[string]any{
		"global": map[string]any{"scrape_interval": interval, "evaluation_interval": interval, "scrape_timeout": interval},
		"scrape_configs": []any{map[string]any{
			"job_name":       "tether",
			"honor_labels":   true,
			"static_configs": []any{map[string]any{"targets": opts.Targets}},
		}},
		"rule_files": opts.RuleFiles,
	}
	out, err := yaml.Marshal(config)
	if err != nil {
		panic(err) // a map of strings and slices always marshals
	}
	return out
}

// readyTimeout bounds Prometheus's start; it takes a second or two.
const readyTimeout = time.Minute

func (s *Server) waitReady(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for {
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("prometheus exited before it was ready: %v\n%s", err, s.log)
		default:
		}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+"/-/ready", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready within %v (last: %v)\n%s", readyTimeout, err, s.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *Server) stop(t testing.TB) {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if err != nil {
			t.Logf("prometheus stopped: %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		t.Errorf("prometheus did not stop within 30s of SIGTERM: %v", <-s.done)
	}
	if t.Failed() {
		t.Logf("prometheus log:\n%s", s.log)
	}
}

// Query runs an instant query now and returns its result, which must be a vector.
func (s *Server) Query(ctx context.Context, expr string) (model.Vector, error) {
	v, _, err := s.api.Query(ctx, expr, time.Now())
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", expr, err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("query %s: a %s, not a vector", expr, v.Type())
	}
	return vec, nil
}

// QueryRange runs a range query over [start, end] at step and returns its result.
func (s *Server) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	v, _, err := s.api.QueryRange(ctx, expr, promv1.Range{Start: start, End: end, Step: step})
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", expr, err)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("query %s: a %s, not a matrix", expr, v.Type())
	}
	return m, nil
}

// Alerts returns the alerts that are pending or firing now.
func (s *Server) Alerts(ctx context.Context) ([]promv1.Alert, error) {
	res, err := s.api.Alerts(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing alerts: %w", err)
	}
	return res.Alerts, nil
}

// RulesWithFor writes a copy of the rule file at path in which every rule's `for`
// is d, or the duration byAlert gives for the rule's alert, and returns the copy's
// path: the test overlay that lets alerts fire in seconds. Everything else about the
// rules is as shipped.
func RulesWithFor(t testing.TB, path string, d time.Duration, byAlert map[string]time.Duration) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []map[string]any `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	changed := 0
	for _, g := range rules.Groups {
		list, _ := g["rules"].([]any)
		for _, r := range list {
			if rule, ok := r.(map[string]any); ok && rule["for"] != nil {
				forDuration := d
				if alert, _ := rule["alert"].(string); byAlert[alert] != 0 {
					forDuration = byAlert[alert]
				}
				rule["for"] = model.Duration(forDuration).String()
				changed++
			}
		}
	}
	if changed == 0 {
		t.Fatalf("%s: no rule has a `for` to shorten", path)
	}
	out, err := yaml.Marshal(rules)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(copyPath, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return copyPath
}

// ErrNoSample is returned by Value for a query with an empty result.
var ErrNoSample = errors.New("no sample")

// Value runs an instant query whose result is one sample and returns its value.
func (s *Server) Value(ctx context.Context, expr string) (float64, error) {
	vec, err := s.Query(ctx, expr)
	if err != nil {
		return 0, err
	}
	switch len(vec) {
	case 0:
		return 0, fmt.Errorf("query %s: %w", expr, ErrNoSample)
	case 1:
		return float64(vec[0].Value), nil
	}
	return 0, fmt.Errorf("query %s: %d samples, want one", expr, len(vec))
}
