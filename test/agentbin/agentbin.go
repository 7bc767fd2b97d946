// Package agentbin builds the tether binary of this tree for the test packages that
// run it as users do (e2e, alerts), once per test binary.
package agentbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"tether.dev/tether/test/controlplane"
)

// Main builds the tether binary into a temporary directory, sets *binary to its
// path, and runs m against a shared control plane started with opts; name labels
// the directory and errors. Use it as TestMain's body: os.Exit(agentbin.Main(...)).
func Main(m *testing.M, name string, binary *string, opts controlplane.Options) int {
	dir, err := os.MkdirTemp("", "tether-"+name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*binary = filepath.Join(dir, "tether")
	build := exec.Command("go", "build", "-o", *binary, "tether.dev/tether/cmd/tether")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: building the tether binary: %v\n", name, err)
		return 1
	}
	return controlplane.RunMain(m, opts)
}
