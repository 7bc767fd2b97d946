package renderfuzz

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"tether.dev/tether/test/agentbin/tetherbin"
)

// tetherBinary is the tether binary of this tree, built as it ships.
var tetherBinary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "tether-renderfuzz-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	tetherBinary = filepath.Join(dir, "tether")
	if err := tetherbin.Build(tetherBinary); err != nil {
		fmt.Fprintf(os.Stderr, "renderfuzz: building the tether binary: %v\n", err)
		return 1
	}
	return m.Run()
}
