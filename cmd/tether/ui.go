package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"runtime"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/ui"
)

// uiFlags are the command line of `tether ui`.
type uiFlags struct {
	kube      *kubeFlags
	address   string
	noBrowser bool
}

func newUICommand(kube *kubeFlags) *cobra.Command {
	f := &uiFlags{kube: kube}
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve a web UI of the Syncs you may see, acting as you",
		Long: `Serve a web UI on --address (loopback only): every Sync you may list, with its
sync, health, readiness, revision and why it fails, updated live; and for each
Sync its conditions, the tree of its objects and what they own, its Events and
its history, with buttons to reconcile now, suspend and resume.

The UI has no identity of its own: every read and action is made with your
kubeconfig (and --context, --as, ...), so it shows only what you may read, and
the API server refuses what you may not do. With -n it shows that namespace
alone; otherwise every namespace you may list Syncs in, or else your context's.

It prints the URL to open on stdout, with a one-time sign-in token, and opens a
browser unless --no-browser. It serves until interrupted.`,
		Example: `  tether ui
  tether ui --address 127.0.0.1:9100 --no-browser --context staging`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&f.address, "address", "127.0.0.1:9000", "The loopback address to serve on (port 0 picks a free one).")
	cmd.Flags().BoolVar(&f.noBrowser, "no-browser", false, "Print the URL only; do not open a browser.")
	kube.bind(cmd)
	return cmd
}

func (f *uiFlags) run(ctx context.Context, stdout, stderr io.Writer) error {
	if err := loopbackOnly(f.address); err != nil {
		return err
	}
	cfg, err := f.kube.restConfig("ui")
	if err != nil {
		return err
	}
	ns, err := f.kube.namespace()
	if err != nil {
		return err
	}
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	log := logr.FromSlogHandler(slog.NewTextHandler(stderr, nil))
	srv, err := ui.New(ctx, ui.Options{Config: cfg, Scheme: scheme, Namespace: ns, AllNamespaces: !f.kube.namespaceGiven(), User: whoAmI(ctx, c), Render: renderForUI, Log: log})
	if err != nil {
		return err
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", f.address)
	if err != nil {
		return fmt.Errorf("serving the UI: %w", err)
	}
	url := srv.LoginURL(l.Addr())
	if _, err := fmt.Fprintln(stdout, url); err != nil {
		return err
	}
	if !f.noBrowser {
		openBrowser(url, stderr)
	}
	return srv.Serve(ctx, l)
}

// renderForUI renders a Sync's source for the UI's diff page as `tether diff
// NAME --use-secret-ref` does: the Secrets the Sync names are read with the
// user's own rights (a user who may not read them is refused the diff), used
// to fetch and decrypt, and never shown.
func renderForUI(ctx context.Context, user client.Client, cfg *rest.Config, s *v1alpha1.Sync) ([]*unstructured.Unstructured, error) {
	return renderSync(ctx, user, cfg, s, syncRendering{useSecretRef: true, warn: io.Discard})
}

// loopbackOnly refuses an address beyond this machine: the UI is served over
// plain http to one user.
func loopbackOnly(address string) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("--address %q: %w", address, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--address %q: the UI serves plain http to you alone, on a loopback address only (127.0.0.1, ::1)", address)
	}
	return nil
}

// openBrowser asks the desktop to open url; failing that, the printed URL is there.
func openBrowser(url string, stderr io.Writer) {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "tether: could not open a browser (%v): open the URL above\n", err)
		return
	}
	go func() { _ = cmd.Wait() }()
}
