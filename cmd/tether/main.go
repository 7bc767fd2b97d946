// Command tether is the GitOps sync agent: `tether controller` runs in a cluster and
// keeps it equal to git; the other commands (render, diff, get, reconcile, wait,
// suspend, resume, tree, events) help people and pipelines.
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

	"tether.dev/tether/source"
)

// version is set at link time (-X main.version=...).
var version = "dev"

// errUsage marks a command line that could not be understood; it exits 2. The
// command has printed what was wrong.
var errUsage = errors.New("usage error")

// Exit statuses, the same for every command (docs/cli.md prints exitStatuses): 1 is
// an answer ("it differs", "the Sync failed"), 2 says the command could not answer.
const (
	exitFailed   = 1
	exitBroken   = 2
	exitTimedOut = 3
)

// exitStatuses is the table of exit statuses in docs/cli.md.
var exitStatuses = []struct {
	code    int
	meaning string
}{
	{0, "done: the command did what it was asked; `diff` found no difference; `wait` and `reconcile --wait` saw the Sync Ready"},
	{exitFailed, "the answer is no: `diff` found a difference; the Sync failed or is Stalled (`wait`, `reconcile --wait`); `reconcile` of a suspended Sync; `check` found a check that failed"},
	{exitBroken, "the command could not answer: a usage error, a Sync or cluster that cannot be read (not found, forbidden, unreachable), a directory or repository that cannot be rendered"},
	{exitTimedOut, "timed out: `wait` and `reconcile --wait` before the Sync was Ready or failed; `render` past `--render-timeout`"},
}

// exitError carries the exit status of a command whose statuses say more than
// success or failure.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func (e *exitError) Unwrap() error { return e.err }

func main() {
	// A render worker the agent started: render one job and exit
	// (source/wall).
	source.ServeRenderWorker()
	// Before anything can render: no request leaves rendering, whatever a
	// kustomization names (see source.IsolateRendering).
	source.IsolateRendering()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	source.CloseRenderWorkers()
	if code := exitCode(err, os.Stderr); code != 0 {
		os.Exit(code)
	}
}

// exitCode is the one place that maps a command's error to the exit status. It
// prints the error, except where the command has said all there is: a usage error
// (2) and a diff found (1). An *exitError exits with its code; any other error says
// the command could not answer, 2.
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
	return exitBroken
}

// printError writes err one line at a time, so that each of several joined errors
// (one per failed object) reads as a message of its own.
func printError(w io.Writer, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintln(w, "tether:", line)
	}
}

// run runs the command line args (without the program name).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := newRootCommand(stdout, stderr)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}
