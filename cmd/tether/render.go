package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/source"
)

// newRenderCommand prints what a directory on disk renders to, exactly as the
// agent would render the same directory of a commit (source.RenderDirectory
// copies and renders it by the agent's own path), and within the same deadline.
func newRenderCommand() *cobra.Command {
	timeout := source.DefaultOptions().RenderTimeout
	var dec decryptFlags
	var helm source.Helm
	var chart source.ChartRequest
	var caps capabilityFlags
	opts := source.DefaultOptions()
	cmd := &cobra.Command{
		Use:   "render DIR | --chart-repository URL --chart NAME [--chart-version RANGE]",
		Short: "Print the objects a directory renders to",
		Long: "Print the objects DIR renders to (plain YAML/JSON manifests, a kustomization, or a Helm chart) as a YAML stream, as the agent would render the same directory of a commit. A chart renders as `helm template` would, with the release name, namespace and values files given (as a Sync's spec.helm), without a cluster (Helm's default capabilities). A render not finished after --render-timeout fails (exit status 3), as it does in the agent.\n\n" +
			"Secret values are printed as *** unless --decrypt is given: with --decrypt --keys DIR, SOPS-encrypted files are decrypted locally with the keys in DIR and the Secrets are printed in clear, for the user who holds the keys.\n\n" +
			"With --chart-repository and --chart instead of DIR, a packaged chart is fetched from a chart repository (https://…, its index.yaml) or an OCI registry (oci://…) and rendered as the agent renders a Sync's spec.source.chart: the newest version matching --chart-version, within the agent's default bounds, with no credentials. --render-timeout bounds the fetch and the render together.",
		Args: func(cmd *cobra.Command, args []string) error {
			if chart.Repository != "" || chart.Name != "" {
				if len(args) != 0 || chart.Repository == "" || chart.Name == "" {
					return usageError(cmd, "a packaged chart takes --chart-repository and --chart, and no DIR")
				}
				return nil
			}
			return oneName(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if msg := dec.misuse(); msg != "" {
				return usageError(cmd, msg)
			}
			helm.Capabilities = caps.capabilities()
			// The worker's own deadline lies past the command's, which
			// reports it (exit status 3).
			opts.RenderTimeout = timeout + time.Second
			if timeout <= 0 {
				opts.RenderTimeout = 24 * time.Hour
			}
			if chart.Repository != "" {
				if dec.decrypt {
					return usageError(cmd, "--decrypt reads SOPS files of a directory; a packaged chart has none")
				}
				return runRenderChart(cmd.Context(), chart, helm, timeout, cmd.OutOrStdout())
			}
			return runRender(cmd.Context(), args[0], helm, opts, timeout, dec, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&chart.Repository, "chart-repository", "", "A chart repository (https://…) or OCI registry (oci://…) to render a packaged chart from (spec.source.chart.repository), instead of DIR.")
	cmd.Flags().StringVar(&chart.Name, "chart", "", "The packaged chart's name (spec.source.chart.name).")
	cmd.Flags().StringVar(&chart.Version, "chart-version", "", "An exact version or a semver range (spec.source.chart.version); default the newest release.")
	cmd.Flags().StringVar(&helm.ReleaseName, "release-name", "", "A chart's release name (spec.helm.releaseName); default the chart's name.")
	cmd.Flags().StringVar(&helm.Namespace, "namespace", "", "A chart's release namespace (spec.destination.namespace); default \"default\".")
	cmd.Flags().StringArrayVar(&helm.ValuesFiles, "values", nil, "A chart's values file, relative to the chart's directory (spec.helm.valuesFiles); repeat to layer them.")
	cmd.Flags().DurationVar(&timeout, "render-timeout", timeout, "Longest the render may take, as the agent's --render-timeout; 0: no bound.")
	dec.bind(cmd.Flags())
	caps.bind(cmd.Flags())
	bindRenderLimitsP(cmd.Flags(), &opts)
	return cmd
}

func runRender(ctx context.Context, typed string, helm source.Helm, opts source.Options, timeout time.Duration, flags decryptFlags, stdout io.Writer) error {
	dir, err := filepath.Abs(typed)
	if err != nil {
		return err
	}
	// Said here, in the user's words: the renderer would name the directory
	// relative to the working directory, "../../x", as if it were in a repository.
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return fmt.Errorf("%s: no such directory", typed)
	}
	dec, err := flags.decryption()
	if err != nil {
		return err
	}
	objs, err := renderDirWith(ctx, typed, helm, opts, timeout, dec)
	if err != nil {
		return err
	}
	return printRendered(objs, dec == nil, stdout)
}

// printRendered writes objs to stdout as a YAML stream, their Secrets' values
// masked when mask is set.
func printRendered(objs []*unstructured.Unstructured, mask bool, stdout io.Writer) error {
	if mask {
		maskSecrets(objs)
	}
	out, err := encodeYAML(objs)
	if err != nil {
		return err
	}
	_, err = stdout.Write(out)
	return err
}

// runRenderChart prints what a packaged chart renders to (renderPackagedChart),
// hooks included, its Secrets masked.
func runRenderChart(ctx context.Context, req source.ChartRequest, helm source.Helm, timeout time.Duration, stdout io.Writer) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	objs, err := renderPackagedChart(ctx, req, helm)
	if err != nil {
		return err
	}
	return printRendered(objs, true, stdout)
}

// renderDir renders a directory on disk by the agent's own path and bounds
// (source.RenderDirectory: what is printed is what the agent applies), within
// timeout (none when 0): past it, or when ctx ends, it returns a RenderError
// naming the directory as typed (ErrRenderTimeout past the timeout, exit status
// 3). Kustomize cannot be interrupted, nor can a read of a file that never ends
// (a named pipe): the render is left to the end of the process, which follows.
func renderDir(ctx context.Context, typed string, helm source.Helm, timeout time.Duration, dec *source.Decryption) ([]*unstructured.Unstructured, error) {
	return renderDirWith(ctx, typed, helm, source.DefaultOptions(), timeout, dec)
}

// renderDirWith is renderDir within opts.
func renderDirWith(ctx context.Context, typed string, helm source.Helm, opts source.Options, timeout time.Duration, dec *source.Decryption) ([]*unstructured.Unstructured, error) {
	type result struct {
		objs []*unstructured.Unstructured
		err  error
	}
	done := make(chan result, 1)
	go func() {
		objs, err := source.RenderDirectoryDecrypted(ctx, typed, helm, opts, dec)
		done <- result{objs, err}
	}()
	var expired <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		expired = timer.C
	}
	select {
	case r := <-done:
		return r.objs, r.err
	case <-expired:
		return nil, &exitError{code: exitTimedOut, err: &source.RenderError{File: typed, Err: fmt.Errorf("%w: not finished after %s (--render-timeout)", source.ErrRenderTimeout, timeout)}}
	case <-ctx.Done():
		return nil, &source.RenderError{File: typed, Err: context.Cause(ctx)}
	}
}

// encodeYAML writes objects as a YAML stream, one document each; no objects is an
// empty stream.
func encodeYAML(objs []*unstructured.Unstructured) ([]byte, error) {
	if len(objs) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	for _, o := range objs {
		if err := enc.Encode(o.Object); err != nil {
			return nil, fmt.Errorf("encoding %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
