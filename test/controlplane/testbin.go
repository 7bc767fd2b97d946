package controlplane

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// BinDirEnv names the environment variable that overrides where the control-plane
// binaries are taken from.
const BinDirEnv = "TETHER_TESTBIN"

// modulePath identifies Tether's go.mod while walking up from the working directory;
// the nested modules under test/tools have go.mod files of their own.
const modulePath = "tether.dev/tether"

// kwokStages are the kwok stage configurations `make testbin` copies next to kwok:
// nodes become Ready and keep a lease, pods become Ready, finish, and go away when
// deleted.
var kwokStages = []string{
	"node-initialize.yaml",
	"node-heartbeat-with-lease.yaml",
	"pod-ready.yaml",
	"pod-complete.yaml",
	"pod-delete.yaml",
}

// BinDir returns the directory the control-plane binaries come from: $TETHER_TESTBIN,
// else .tools/testbin under the module root (found by walking up from the working
// directory). Tests that need kubectl take it from here too.
func BinDir() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return filepath.Abs(dir)
	}
	root, err := moduleRoot()
	if err != nil {
		return "", fmt.Errorf("locating the control-plane binaries (set %s to their directory): %w", BinDirEnv, err)
	}
	return filepath.Join(root, ".tools", "testbin"), nil
}

// moduleRoot walks up from the working directory (a test's package directory) to
// the directory whose go.mod declares Tether's module.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if ok, err := declaresModule(filepath.Join(dir, "go.mod")); err != nil {
			return "", err
		} else if ok {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod declaring module %s above the working directory", modulePath)
		}
		dir = parent
	}
}

// declaresModule reports whether the go.mod at path starts with "module tether.dev/tether".
func declaresModule(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return false, sc.Err()
	}
	return strings.TrimSpace(sc.Text()) == "module "+modulePath, nil
}

// binaries resolves the executables and files a control plane needs and reports all
// the missing ones at once, with the command that builds them.
type binaries struct {
	etcd, apiserver, controllerManager, scheduler, kwok string
	kwokStages                                          []string
}

func findBinaries(workloads bool) (binaries, error) {
	dir, err := BinDir()
	if err != nil {
		return binaries{}, err
	}
	b := binaries{
		etcd:      filepath.Join(dir, "etcd"),
		apiserver: filepath.Join(dir, "kube-apiserver"),
	}
	need := []string{b.etcd, b.apiserver}
	if workloads {
		b.controllerManager = filepath.Join(dir, "kube-controller-manager")
		b.scheduler = filepath.Join(dir, "kube-scheduler")
		b.kwok = filepath.Join(dir, "kwok")
		need = append(need, b.controllerManager, b.scheduler, b.kwok)
		for _, s := range kwokStages {
			b.kwokStages = append(b.kwokStages, filepath.Join(dir, "kwok-stages", s))
		}
		need = append(need, b.kwokStages...)
	}
	var missing []string
	for _, path := range need {
		if _, err := os.Stat(path); err != nil {
			missing = append(missing, strings.TrimPrefix(path, dir+string(filepath.Separator)))
		}
	}
	if len(missing) > 0 {
		return binaries{}, fmt.Errorf("control-plane binaries missing from %s: %s; run `make testbin` (or set %s to a directory that has them)",
			dir, strings.Join(missing, ", "), BinDirEnv)
	}
	return b, nil
}
