package alerts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"tether.dev/tether/test/controlplane"
)

// tetherBinary is the agent binary TestMain built from this tree.
var tetherBinary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "tether-alerts-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	tetherBinary = filepath.Join(dir, "tether")
	build := exec.Command("go", "build", "-o", tetherBinary, "tether.dev/tether/cmd/tether")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "alerts: building the tether binary: %v\n", err)
		return 1
	}
	return controlplane.RunMain(m, controlplane.Options{Workloads: true})
}
