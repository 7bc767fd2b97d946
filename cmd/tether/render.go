package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/source"
)

// newRenderCommand prints what a directory on disk renders to, exactly as the
// agent would render the same directory of a commit: source.RenderDirectory
// copies and renders it by the agent's own path.
func newRenderCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "render DIR",
		Short: "Print the objects a directory renders to",
		Long:  "Print the objects DIR renders to (plain YAML/JSON manifests or a kustomization) as a YAML stream, as the agent would render the same directory of a commit.",
		Args:  oneName,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRender(args[0], cmd.OutOrStdout())
		},
	}
}

func runRender(typed string, stdout io.Writer) error {
	dir, err := filepath.Abs(typed)
	if err != nil {
		return err
	}
	// Said here, in the user's words: the renderer would name the directory
	// relative to the working directory, "../../x", as if it were in a repository.
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return fmt.Errorf("%s: no such directory", typed)
	}
	// The agent's own path and bounds: what is printed is what the agent applies.
	objs, err := source.RenderDirectory(dir, source.DefaultOptions())
	if err != nil {
		return err
	}
	out, err := encodeYAML(objs)
	if err != nil {
		return err
	}
	_, err = stdout.Write(out)
	return err
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
