package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// The log measurement's knobs. It runs only when logWindowEnv is set, since it
// takes that long: `make test` skips it.
const (
	// logWindowEnv is how long the agent runs with the broken Syncs, as a Go
	// duration ("4m").
	logWindowEnv = "TETHER_LOG_WINDOW"
	// logIntervalEnv is the Syncs' spec.source.interval; unset, they have none, and
	// poll at the default (v1alpha1.DefaultInterval).
	logIntervalEnv = "TETHER_LOG_INTERVAL"
	// logBinaryEnv names another tether binary to run instead of this tree's (one
	// built from an older commit, to compare).
	logBinaryEnv = "TETHER_LOG_BINARY"
	// logSaveEnv names a file the agent's whole log is written to.
	logSaveEnv = "TETHER_LOG_SAVE"
)

// TestTheLogOfThreeBrokenSyncs measures what an operator reads when something is
// broken: the shipped binary, at its default flags, runs for TETHER_LOG_WINDOW with
// three Syncs that fail on bad input in git (broken YAML, a path that is not in the
// repository, an object of a kind the cluster does not serve), and the test prints
// the agent's log lines by level, with those that carry a stack trace. It fails only
// if the agent stops or a Sync is not failing at the end, which would make the
// figures mean nothing; TestABrokenSyncIsLoggedOnceWithoutAStackTrace is the check.
//
//	TETHER_LOG_WINDOW=4m go test -count=1 -timeout=10m -run '^TestTheLogOfThreeBrokenSyncs$' -v ./test/e2e/
//
// hack/lognoise.sh runs it for the binaries of two commits.
func TestTheLogOfThreeBrokenSyncs(t *testing.T) {
	raw := os.Getenv(logWindowEnv)
	if raw == "" {
		t.Skipf("a measurement that takes minutes: set %s (e.g. 4m) to run it", logWindowEnv)
	}
	window, err := time.ParseDuration(raw)
	harness.Must(t, err)
	var interval *metav1.Duration
	if raw := os.Getenv(logIntervalEnv); raw != "" {
		d, err := time.ParseDuration(raw)
		harness.Must(t, err)
		interval = &metav1.Duration{Duration: d}
	}
	if b := os.Getenv(logBinaryEnv); b != "" {
		// No other test runs beside this one (it is not parallel), so launchAgent
		// may read another binary for its length.
		built := tetherBinary
		tetherBinary = b
		t.Cleanup(func() { tetherBinary = built })
	}

	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{})
	broken := map[string]map[string]string{
		"broken-yaml":  {"app/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [oops\n"},
		"missing-path": {"elsewhere/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: elsewhere}\n"},
		"unknown-kind": {"app/thing.yaml": "apiVersion: example.com/v1\nkind: NoSuchKind\nmetadata: {name: thing}\n"},
	}
	a := launchAgent(t, controlplane.Shared(t).KubeconfigPath())
	started := time.Now()
	var syncs []*v1alpha1.Sync
	for name, files := range broken {
		repo := git.CreateRepo(t, name)
		repo.Commit(t, files, name)
		s := gitSync(ns, name, repo.URL(), "app", 0)
		s.Spec.Source.Interval = interval
		createSync(t, c, s)
		syncs = append(syncs, s)
	}
	select {
	case err := <-a.done:
		a.done <- err // for the agent's cleanup, which waits for it
		t.Fatalf("the agent exited during the window: %v", err)
	case <-time.After(window - time.Since(started)):
	}
	for _, s := range syncs {
		harness.Eventually(t, waitTimeout, s.Name+" is failing", func(ctx context.Context) (bool, error) {
			got := &v1alpha1.Sync{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
				return false, err
			}
			ready := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
			if ready == nil || ready.Status != metav1.ConditionFalse {
				return false, fmt.Errorf("Ready is %v", ready)
			}
			t.Logf("%s: Ready False, %s: %s", s.Name, ready.Reason, ready.Message)
			return true, nil
		})
	}

	log := a.log.String()
	if path := os.Getenv(logSaveEnv); path != "" {
		harness.Must(t, os.WriteFile(path, []byte(log), 0o600))
	}
	polled := v1alpha1.DefaultInterval
	if interval != nil {
		polled = interval.Duration
	}
	t.Logf("the agent's log over %v with three broken Syncs (interval %v): %s", window, polled, countLines(log))
}

// countLines counts the lines of a JSON log by level, and those with a stack trace.
func countLines(log string) string {
	levels := map[string]int{}
	total, traces := 0, 0
	for line := range strings.SplitSeq(strings.TrimSpace(log), "\n") {
		total++
		var entry struct {
			Level      string `json:"level"`
			Stacktrace string `json:"stacktrace"`
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			levels["not JSON"]++
			continue
		}
		levels[entry.Level]++
		if entry.Stacktrace != "" {
			traces++
		}
	}
	names := make([]string, 0, len(levels))
	for l := range levels {
		names = append(names, l)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, l := range names {
		parts = append(parts, fmt.Sprintf("%s %d", l, levels[l]))
	}
	return fmt.Sprintf("%d lines (%s), %d with a stack trace", total, strings.Join(parts, ", "), traces)
}
