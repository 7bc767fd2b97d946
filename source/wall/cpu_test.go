package wall

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"tether.dev/tether/source/render"
)

// TestAWorkerPastItsProcessorTimeIsNamedSo: the kernel's SIGXCPU (RLIMIT_CPU's
// soft limit passed) ends a worker, which Go's runtime would otherwise ignore,
// and the agent names the limit it met.
func TestAWorkerPastItsProcessorTimeIsNamedSo(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	limits := workerLimits{Memory: 384 << 20, CPU: time.Minute, Files: workerOpenFiles, Input: 1 << 20}
	w, err := startWorker(exe, limits)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	// A first job answered: the worker is past its start, where it asks for
	// SIGXCPU.
	opts := render.DefaultOptions()
	frame, err := encodeFrame(&Job{Dir: "app", Files: map[string][]byte{"/app/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")}, Dirs: []string{"/app"}, Opts: opts})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, err := w.run(frame, "app", opts); err != nil || len(r.objs) != 1 {
		t.Fatalf("a first job: %d objects, %v", len(r.objs), err)
	}
	if err := w.cmd.Process.Signal(syscall.SIGXCPU); err != nil {
		t.Fatal(err)
	}
	<-w.exited
	watch := &jobWatch{dir: "app", limits: limits}
	if err := watch.crashError(w.stderr.String(), w.waitErr); !errors.Is(err, ErrRenderCPU) || !strings.Contains(w.stderr.String(), cpuExceeded) {
		t.Fatalf("a worker sent SIGXCPU: %v (stderr %q); want %v", err, w.stderr.String(), ErrRenderCPU)
	}
}
