package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// newRootCommand builds the command tree. Every command writes to stdout and
// stderr as given, so that tests run the same tree main does.
func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "tether",
		Short: "tether keeps a Kubernetes cluster equal to a git repository",
		Long: `tether keeps a Kubernetes cluster equal to a git repository.

'tether controller' is the agent that runs in the cluster. The other commands
look at Syncs and what they manage, and ask the agent to act, from a laptop or a
pipeline; they take kubectl's connection flags (--kubeconfig, --context, -n, --as,
--request-timeout).`,
		Version:           version,
		SilenceErrors:     true,
		SilenceUsage:      true,
		Args:              noArgs,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false},
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(cmd.ErrOrStderr())
			_ = cmd.Usage()
			return errUsage
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	kube := newKubeFlags()
	root.AddCommand(
		newControllerCommand(),
		newRenderCommand(),
		newDiffCommand(kube),
		newGetCommand(kube),
		newReconcileCommand(kube),
		newWaitCommand(kube),
		newSuspendCommand(kube, true),
		newSuspendCommand(kube, false),
		newTreeCommand(kube),
		newEventsCommand(kube),
		newHistoryCommand(kube),
		newRollbackCommand(kube),
		newPreviewCommand(kube),
		newImportCommand(kube),
		newUICommand(kube),
		newNotifyCommand(kube),
		newInstallCommand(kube),
		newCheckCommand(kube),
		newBootstrapCommand(kube),
		newPushCommand(),
		newVersionCommand(),
		newDocsCommand(),
	)
	return root
}

// flagError reports a flag that could not be parsed, with where to read more, and
// makes it a usage error (exit 2).
func flagError(cmd *cobra.Command, err error) error {
	fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\nRun '%s --help' for usage.\n", cmd.CommandPath(), err, cmd.CommandPath())
	return fmt.Errorf("%w: %w", errUsage, err)
}

// usageError prints msg as flagError does and returns a usage error.
func usageError(cmd *cobra.Command, msg string) error {
	fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\nRun '%s --help' for usage.\n", cmd.CommandPath(), msg, cmd.CommandPath())
	return fmt.Errorf("%w: %s", errUsage, msg)
}

// noArgs refuses arguments; on the root command, an unknown command.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if !cmd.HasParent() {
		return usageError(cmd, fmt.Sprintf("unknown command %q", args[0]))
	}
	return usageError(cmd, "unexpected arguments "+strings.Join(args, " "))
}

// oneName wants the one argument, NAME, of the commands that act on one Sync.
func oneName(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageError(cmd, fmt.Sprintf("want one argument, got %d", len(args)))
	}
	return nil
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), version)
			return err
		},
	}
}

// kubeFlags are kubectl's connection flags (cli-runtime's), shared by every
// command that talks to a cluster.
type kubeFlags struct {
	config *genericclioptions.ConfigFlags
}

func newKubeFlags() *kubeFlags {
	cf := genericclioptions.NewConfigFlags(true)
	// The disk cache of discovery is kubectl's business; tether asks little.
	cf.CacheDir = nil
	return &kubeFlags{config: cf}
}

// bind adds the connection flags to cmd.
func (k *kubeFlags) bind(cmd *cobra.Command) {
	k.config.AddFlags(cmd.Flags())
}

// restConfig is the client configuration the flags select, with tether's user
// agent and rate limits fit for a command that makes a few hundred requests.
func (k *kubeFlags) restConfig(command string) (*rest.Config, error) {
	cfg, err := k.config.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = "tether-" + command + "/" + version
	return withOwnTransport(cfg), nil
}

// withOwnTransport makes client-go build a transport of its own for cfg where it
// would use http.DefaultTransport, which refuses every request in this process
// (source.IsolateRendering): for a server without TLS options of its own (plain
// http, as behind `kubectl proxy`, or https against the system's roots) and no
// proxy named. Naming the proxy the default transport would have used
// (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) does it. Configurations with TLS options
// (in a cluster: the service account's CA) are left alone, so that client-go
// still shares one transport between them (the impersonating clients): it cannot
// share one whose config names a proxy.
func withOwnTransport(cfg *rest.Config) *rest.Config {
	if cfg.Proxy != nil || cfg.Transport != nil || cfg.Dial != nil {
		return cfg
	}
	tc, err := cfg.TransportConfig()
	if err != nil {
		return cfg // building the client reports it
	}
	if tlsConfig, err := transport.TLSConfigFor(tc); err == nil && tlsConfig == nil {
		cfg.Proxy = http.ProxyFromEnvironment
	}
	return cfg
}

// namespace is -n, or else the kubeconfig context's namespace, as kubectl uses.
func (k *kubeFlags) namespace() (string, error) {
	ns, _, err := k.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("loading kubeconfig: %w", err)
	}
	return ns, nil
}

// namespaceGiven reports whether -n was on the command line.
func (k *kubeFlags) namespaceGiven() bool {
	return k.config.Namespace != nil && *k.config.Namespace != ""
}

// client returns a client that knows Syncs and the built-in kinds.
func (k *kubeFlags) client(command string) (client.Client, error) {
	cfg, err := k.restConfig(command)
	if err != nil {
		return nil, err
	}
	return clientFor(cfg)
}

// clientFor returns a client of cfg that knows Syncs and the built-in kinds.
func clientFor(cfg *rest.Config) (client.Client, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating a client for %s: %w", cfg.Host, err)
	}
	return c, nil
}
