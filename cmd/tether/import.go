package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/importer"
)

// errSomethingLost is the answer of `tether import --check` when the Syncs
// would not carry everything (exit 1).
var errSomethingLost = errors.New("tether import: something would be lost (listed above)")

// newImportCommand converts Flux's and Argo CD's objects into Syncs.
func newImportCommand(kube *kubeFlags) *cobra.Command {
	var files []string
	var fromCluster, check bool
	cmd := &cobra.Command{
		Use:   "import -f FILE... | --from-cluster",
		Short: "Convert Flux and Argo CD objects into Syncs",
		Long: "Read Flux's GitRepository, OCIRepository, HelmRepository, Kustomization and HelmRelease objects and Argo CD's Application and AppProject objects (from files, - for standard input, or with --from-cluster from every namespace of the cluster) and print the equivalent Syncs as YAML on standard output. What the Syncs cannot carry is printed on standard error, one line per field, naming the object and saying why; docs/coming-from-argocd-flux.md maps every field.\n\n" +
			"With --check, exit 1 when something would be lost (and 0 when nothing would), for a pipeline.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (len(files) == 0) == !fromCluster {
				return usageError(cmd, "give -f FILE... or --from-cluster")
			}
			var objs []*unstructured.Unstructured
			var err error
			if fromCluster {
				objs, err = peerObjectsInCluster(cmd.Context(), kube)
			} else {
				objs, err = readObjectFiles(files, cmd.InOrStdin())
			}
			if err != nil {
				return err
			}
			return runImport(objs, check, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "A YAML file of Flux or Argo CD objects (- for standard input); repeat for more.")
	cmd.Flags().BoolVar(&fromCluster, "from-cluster", false, "Read the objects from every namespace of the cluster instead of files.")
	cmd.Flags().BoolVar(&check, "check", false, "Exit 1 when the Syncs would not carry everything.")
	kube.bind(cmd)
	return cmd
}

// runImport converts objs and prints the Syncs and the losses.
func runImport(objs []*unstructured.Unstructured, check bool, stdout, stderr io.Writer) error {
	res := importer.Convert(objs)
	for _, s := range res.Syncs {
		text, err := syncYAML(s)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "---\n%s", text)
	}
	for _, l := range res.Lost {
		fmt.Fprintf(stderr, "not carried: %s\n", l)
	}
	if check && len(res.Lost) > 0 {
		return &exitError{code: exitFailed, err: errSomethingLost}
	}
	return nil
}

// syncYAML writes s as a user would: no status, no empty metadata.
func syncYAML(s *v1alpha1.Sync) ([]byte, error) {
	m, err := runtimeToMap(s)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return yaml.Marshal(m)
}

func runtimeToMap(s *v1alpha1.Sync) (map[string]any, error) {
	b, err := yaml.Marshal(s)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, yaml.Unmarshal(b, &m)
}

// readObjectFiles reads every YAML document of files ("-" is stdin).
func readObjectFiles(files []string, stdin io.Reader) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, f := range files {
		var data []byte
		var err error
		if f == "-" {
			data, err = io.ReadAll(stdin)
		} else {
			data, err = os.ReadFile(f)
		}
		if err != nil {
			return nil, err
		}
		objs, err := decodeObjects(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// decodeObjects reads a YAML (or JSON) stream of objects; empty documents
// are skipped.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

// peerResources are the peers' kinds that --from-cluster lists, in the
// versions their current releases serve.
var peerResources = []schema.GroupVersionResource{
	{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"},
	{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "ocirepositories"},
	{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "helmrepositories"},
	{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"},
	{Group: "helm.toolkit.fluxcd.io", Version: "v2", Resource: "helmreleases"},
	{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"},
	{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"},
}

// peerObjectsInCluster lists the peers' objects of every namespace; a kind
// the cluster does not serve is skipped.
func peerObjectsInCluster(ctx context.Context, kube *kubeFlags) ([]*unstructured.Unstructured, error) {
	cfg, err := kube.restConfig("import")
	if err != nil {
		return nil, err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, gvr := range peerResources {
		list, err := dc.Resource(gvr).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}
