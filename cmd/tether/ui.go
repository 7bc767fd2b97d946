package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/ui"
)

// uiFlags are the command line of `tether ui`.
type uiFlags struct {
	kube        *kubeFlags
	address     string
	noBrowser   bool
	inCluster   bool
	apiCAFile   string
	maxSessions int
	tlsCert     string
	tlsKey      string
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
browser unless --no-browser. It serves until interrupted.

With --in-cluster (deploy/ui) it serves many users on any --address: each signs
in with a Kubernetes bearer token (a form, or the Authorization header of a
proxy in front, such as an OIDC proxy), verified by a SelfSubjectReview, and
every request is made with that user's token; the server uses no credentials
of its own. In a pod it finds the API server by KUBERNETES_SERVICE_HOST and
--api-ca-file; elsewhere by the kubeconfig's cluster (its credentials unused).
Serve it behind TLS: its cookies are Secure.`,
		Example: `  tether ui
  tether ui --address 127.0.0.1:9100 --no-browser --context staging`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&f.address, "address", "127.0.0.1:9000", "The loopback address to serve on (port 0 picks a free one).")
	cmd.Flags().BoolVar(&f.noBrowser, "no-browser", false, "Print the URL only; do not open a browser.")
	cmd.Flags().BoolVar(&f.inCluster, "in-cluster", false, "Serve many users, each signing in with their own bearer token (deploy/ui).")
	cmd.Flags().IntVar(&f.maxSessions, "max-sessions", ui.DefaultMaxSessions, "With --in-cluster: how many users may be signed in at once (each has a watch on the API server).")
	cmd.Flags().StringVar(&f.tlsCert, "tls-cert-file", "", "With --in-cluster: serve https with this certificate (PEM); else put TLS in front, for the cookies are Secure.")
	cmd.Flags().StringVar(&f.tlsKey, "tls-key-file", "", "The key of --tls-cert-file (PEM).")
	cmd.Flags().StringVar(&f.apiCAFile, "api-ca-file", "/etc/tether-ui/kube-ca/ca.crt", "With --in-cluster in a pod: the CA of the API server (the ConfigMap kube-root-ca.crt).")
	kube.bind(cmd)
	return cmd
}

func (f *uiFlags) run(ctx context.Context, stdout, stderr io.Writer) error {
	if f.inCluster {
		return f.runInCluster(ctx, stdout, stderr)
	}
	if err := loopbackOnly(f.address); err != nil {
		return err
	}
	cfg, err := f.kube.restConfig("ui")
	if err != nil {
		return err
	}
	ns, scheme, err := f.namespaceAndScheme()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	log := uiLog(stderr)
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

// namespaceAndScheme returns the namespace the UI shows (-n, or the context's)
// and the scheme its clients decode with.
func (f *uiFlags) namespaceAndScheme() (string, *apiruntime.Scheme, error) {
	ns, err := f.kube.namespace()
	if err != nil {
		return "", nil, err
	}
	scheme, err := newScheme()
	return ns, scheme, err
}

// runInCluster serves many users, each with their own token (ui.Options.InCluster).
func (f *uiFlags) runInCluster(ctx context.Context, stdout, stderr io.Writer) error {
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return fmt.Errorf("--tls-cert-file and --tls-key-file go together")
	}
	cfg, err := f.apiServer()
	if err != nil {
		return err
	}
	ns, scheme, err := f.namespaceAndScheme()
	if err != nil {
		return err
	}
	log := uiLog(stderr)
	srv, err := ui.New(ctx, ui.Options{Config: cfg, Scheme: scheme, Namespace: ns, AllNamespaces: true, InCluster: true, MaxSessions: f.maxSessions, TLSCertFile: f.tlsCert, TLSKeyFile: f.tlsKey, Render: renderInCluster, Log: log})
	if err != nil {
		return err
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", f.address)
	if err != nil {
		return fmt.Errorf("serving the UI: %w", err)
	}
	if _, err := fmt.Fprintln(stdout, srv.LoginURL(l.Addr())); err != nil {
		return err
	}
	return srv.Serve(ctx, l)
}

// apiServer is where the API server is, without credentials: in a pod, by
// KUBERNETES_SERVICE_HOST and PORT and the CA of --api-ca-file (the pod needs
// no service account token); elsewhere the kubeconfig's cluster.
func (f *uiFlags) apiServer() (*rest.Config, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		cfg, err := f.kube.restConfig("ui")
		if err != nil {
			return nil, err
		}
		return rest.AnonymousClientConfig(cfg), nil
	}
	if _, err := os.Stat(f.apiCAFile); err != nil {
		return nil, fmt.Errorf("--api-ca-file: %w", err)
	}
	cfg := &rest.Config{Host: "https://" + net.JoinHostPort(host, port), TLSClientConfig: rest.TLSClientConfig{CAFile: f.apiCAFile}}
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = "tether-ui/" + version
	return cfg, nil
}

// renderInCluster is renderForUI for a server many users share: a Sync's
// file:// URL is refused, for it would read the server's own files.
func renderInCluster(ctx context.Context, user client.Client, cfg *rest.Config, s *v1alpha1.Sync) ([]*unstructured.Unstructured, error) {
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(s.Spec.Source.URL)), "file:") {
		return nil, fmt.Errorf("file:// URL refused: it would read the UI server's own file system")
	}
	return renderForUI(ctx, user, cfg, s)
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

// uiLog is what tether ui logs with, on stderr. controller-runtime's caches log
// through it too: without a logger set, controller-runtime prints a warning with
// a stack trace half a minute after the UI starts.
func uiLog(stderr io.Writer) logr.Logger {
	log := logr.FromSlogHandler(slog.NewTextHandler(stderr, nil))
	ctrl.SetLogger(log)
	return log
}
