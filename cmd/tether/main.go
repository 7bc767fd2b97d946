// Command tether is the GitOps sync agent: `tether controller` runs in a cluster and
// keeps it equal to git; `tether render` and `tether version` help people and CI.
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
	"syscall"
)

// version is set at link time (-X main.version=...).
var version = "dev"

const usage = `tether keeps a Kubernetes cluster equal to a git repository.

Usage:
  tether controller [flags]   run the agent (in a cluster, or with --kubeconfig)
  tether render DIR           print the objects a directory renders to
  tether version              print the version

Run 'tether COMMAND -h' for the flags of a command.
`

// errUsage marks a command line that could not be understood; it exits 2.
var errUsage = errors.New("usage error")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, errUsage), errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "tether:", err)
		os.Exit(1)
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
