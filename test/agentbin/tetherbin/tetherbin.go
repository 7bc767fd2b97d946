// Package tetherbin builds the tether binary of this tree as it ships. It
// imports nothing but the standard library, so that a package that only runs
// the binary (the render wall's fuzz target) compiles none of the agent.
package tetherbin

import (
	"os"
	"os/exec"
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
