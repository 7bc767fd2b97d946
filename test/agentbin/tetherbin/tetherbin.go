// Package tetherbin builds the tether binary of this tree as it ships. It
// imports nothing but the standard library, so that a package that only runs
// the binary (the render wall's fuzz target) compiles none of the agent.
package tetherbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Build writes the tether binary of this tree to path, built as the image and
// the released binaries are (Dockerfile, make release): static, without symbol
// table and debug information. What the tests measure of the binary (its
// memory: the pages of its file it maps) is then what ships.
//
// The packages that run the binary (e2e, alerts, the fuzz target) build the
// same one, and `go test ./...` runs them side by side: each would compile the
// agent's dependencies (its build differs from the tests' -race build) and link
// a binary of some 90 MB. So the build runs under a lock that the test binaries
// share, and is `go run -exec cp`, which keeps the linked executable in Go's
// build cache: the second package to build waits for the first, then finds
// everything cached, the link included, and only copies it.
func Build(path string) error {
	unlock, err := lockBuilds()
	if err != nil {
		return err
	}
	defer unlock()
	cmd := exec.Command("go", "run", "-exec", "cp", "-trimpath", "-ldflags", "-s -w", "tether.dev/tether/cmd/tether", path)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// Main builds the tether binary into a temporary directory, sets *binary to
// its path, and returns what run returns, the directory removed after it; name
// labels the directory and errors. It prints how long the build took (go test
// -v shows it), since under load it is much of a package's time.
func Main(name string, binary *string, run func() int) int {
	dir, err := os.MkdirTemp("", "tether-"+name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*binary = filepath.Join(dir, "tether")
	start := time.Now()
	if err := Build(*binary); err != nil {
		fmt.Fprintf(os.Stderr, "%s: building the tether binary: %v\n", name, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "%s: built the tether binary in %v\n", name, time.Since(start).Round(100*time.Millisecond))
	return run()
}
