package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// cpuMeter reads the CPU time (user + system) that named processes have spent, to
// say what one phase of a benchmark cost each of them.
type cpuMeter struct {
	tb    testing.TB
	pids  map[string]int
	start map[string]time.Duration
}

// meterCPU starts counting the CPU time of the processes pids names.
func meterCPU(tb testing.TB, pids map[string]int) *cpuMeter {
	m := &cpuMeter{tb: tb, pids: pids, start: map[string]time.Duration{}}
	for name, pid := range pids {
		m.start[name] = cpuTime(tb, pid)
	}
	return m
}

// stop returns the CPU time each process spent since meterCPU, by name.
func (m *cpuMeter) stop() map[string]time.Duration {
	out := map[string]time.Duration{}
	for name, pid := range m.pids {
		out[name] = cpuTime(m.tb, pid) - m.start[name]
	}
	return out
}

// totalCPU is the CPU time of all the processes of a phase.
func totalCPU(spent map[string]time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range spent {
		sum += d
	}
	return sum
}

// formatCPU prints a phase's CPU times by process, in a stable order.
func formatCPU(spent map[string]time.Duration) string {
	names := make([]string, 0, len(spent))
	for name := range spent {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s %.2f s", name, spent[name].Seconds())
	}
	return strings.Join(parts, ", ")
}

// profileAPIServer saves a CPU profile of kube-apiserver over the next d into
// dir/name, when dir is set and the control plane serves /debug/pprof
// (controlplane.ProfilingEnv); it returns a function that waits for the profile.
func profileAPIServer(tb testing.TB, cfg *rest.Config, dir, name string, d time.Duration) (wait func()) {
	tb.Helper()
	if dir == "" || os.Getenv(controlplane.ProfilingEnv) == "" {
		return func() {}
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	harness.Must(tb, err)
	return profileCPU(tb, httpClient, cfg.Host, filepath.Join(dir, name), d)
}

// profileAgent saves a CPU profile of the agent serving pprof at addr over the
// next d into dir/name, when dir is set.
func profileAgent(tb testing.TB, addr, dir, name string, d time.Duration) (wait func()) {
	tb.Helper()
	if dir == "" {
		return func() {}
	}
	return profileCPU(tb, http.DefaultClient, "http://"+addr, filepath.Join(dir, name), d)
}

// profileCPU saves the CPU profile that the pprof handler at base serves over d
// into path, in the background; wait returns once it is saved.
func profileCPU(tb testing.TB, httpClient *http.Client, base, path string, d time.Duration) (wait func()) {
	done := make(chan error, 1)
	go func() {
		url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, int(d.Seconds()))
		resp, err := httpClient.Get(url) //nolint:noctx // a benchmark's one-shot read, bounded by seconds
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: %s", resp.Status, data)
		}
		if err == nil {
			err = os.WriteFile(path, data, 0o600)
		}
		done <- err
	}()
	return func() {
		if err := <-done; err != nil {
			tb.Errorf("CPU profile %s: %v", path, err)
			return
		}
		tb.Logf("CPU profile: %s", path)
	}
}
