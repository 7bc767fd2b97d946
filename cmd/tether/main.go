// Command tether is the GitOps sync agent: `tether controller` runs in a cluster and
// keeps it equal to git; `tether render`, `tether diff` and `tether version` help
// people and CI.
//
// This is the only package that builds concrete types and wires them together.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// version is set at link time (-X main.version=...).
var version = "dev"

const usage = `tether keeps a Kubernetes cluster equal to a git repository.

Usage:
  tether controller [flags]   run the agent (in a cluster, or with --kubeconfig)
  tether render DIR           print the objects a directory renders to
  tether diff [flags]         show how the cluster differs from git (exit 1 if it does)
  tether version              print the version

Run 'tether COMMAND -h' for the flags of a command.
`

// errUsage marks a command line that could not be understood; it exits 2.
var errUsage = errors.New("usage error")

// exitError carries the exit status of a command whose statuses say more than
// success or failure (`tether diff`: 1 differs, 2 error).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func (e *exitError) Unwrap() error { return e.err }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if code := exitCode(err, os.Stderr); code != 0 {
		os.Exit(code)
	}
}

// exitCode is the one place that maps a command's error to the exit status. It
// prints the error, except where the command has said all there is: a usage error
// (2) and a diff found (1). An *exitError exits with its code; any other error, 1.
func exitCode(err error, stderr io.Writer) int {
	var coded *exitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage), errors.Is(err, flag.ErrHelp):
		return 2
	case errors.Is(err, errDiffFound):
		return 1
	case errors.As(err, &coded):
		printError(stderr, err)
		return coded.code
	}
	printError(stderr, err)
	return 1
}

// printError writes err one line at a time, so that each of several joined errors
// (one per failed object) reads as a message of its own.
func printError(w io.Writer, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintln(w, "tether:", line)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	switch args[0] {
	case "controller":
		return runController(ctx, args[1:], stderr)
	case "render":
		return runRender(args[1:], stdout, stderr)
	case "diff":
		return runDiff(ctx, args[1:], stdout, stderr)
	case "version", "--version":
		_, err := fmt.Fprintln(stdout, version)
		return err
	case "help", "-h", "--help":
		_, err := fmt.Fprint(stdout, usage)
		return err
	}
	fmt.Fprintf(stderr, "unknown command %q\n\n%s", args[0], usage)
	return errUsage
}
