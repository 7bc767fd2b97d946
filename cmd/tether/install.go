package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/deploy"
)

// installFieldManager owns the fields `tether install` applies. It is stable
// across versions, so that an upgrade (the same command with a newer binary)
// updates the fields the last install set.
const installFieldManager = "tether-install"

// agentImageRepository is the image the embedded manifests run; --image
// replaces it wherever a container names it.
const agentImageRepository = "ghcr.io/tether-dev/tether"

// installFlags select which of the embedded manifests to install, and how.
type installFlags struct {
	kube       *kubeFlags
	namespaced bool
	tenants    []string
	ui         bool
	export     bool
	image      string
}

// newInstallCommand applies (or prints) the manifests embedded in this binary.
func newInstallCommand(kube *kubeFlags) *cobra.Command {
	f := &installFlags{kube: kube}
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install or upgrade Tether in the cluster, from the manifests of this version",
		Long: "Apply the install that ships with this version of tether (deploy/install.yaml, or with --namespaced deploy/namespaced.yaml for the tenants named by --tenants; with --ui also deploy/ui.yaml) by server-side apply, as the field manager " + installFieldManager + ": the Namespace and the CRDs first, waited for until they are Established, then the rest. Every object is checked by a server-side dry run before any of its stage is written, and one line per object says whether it was created, configured or unchanged, as kubectl does.\n\n" +
			"Running it again changes nothing. An upgrade is the same command run with a newer tether: it updates every object the new manifests name, but removes nothing: an object that an older version installed and the newer one no longer names stays in the cluster (delete it by hand; the release notes name such objects).\n\n" +
			"With --export, print the manifests as YAML instead of applying them, for a repository or `kubectl apply --server-side -f -`.",
		Example: `  tether check --pre && tether install && tether check
  tether install --ui --image registry.example.com/platform/tether:v0.2.0
  tether install --namespaced --tenants team-a,team-b
  tether install --export > tether.yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.namespaced != (len(f.tenants) > 0) {
				return usageError(cmd, "--namespaced and --tenants go together: the namespaced install serves the tenant namespaces it names")
			}
			objs, err := f.manifests()
			if err != nil {
				return err
			}
			if f.export {
				return exportManifests(cmd.OutOrStdout(), objs)
			}
			return f.applyObjects(cmd.Context(), objs, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&f.namespaced, "namespaced", false, "Install the multi-tenant agent (deploy/namespaced.yaml) instead of the cluster-wide one; needs --tenants and Kubernetes 1.30 or newer.")
	fs.StringSliceVar(&f.tenants, "tenants", nil, "With --namespaced: the tenant namespaces (comma-separated, they must exist) whose Syncs the agent serves.")
	fs.BoolVar(&f.ui, "ui", false, "Also install the in-cluster web UI (deploy/ui.yaml).")
	fs.BoolVar(&f.export, "export", false, "Print the manifests as YAML instead of applying them.")
	fs.StringVar(&f.image, "image", "", "Run this image instead of "+agentImageRepository+" at this release's tag (a build between releases: the embedded manifests' tag), e.g. your own build, pinned by digest.")
	kube.bind(cmd)
	return cmd
}

// manifests are the objects to install, in the order of the embedded files.
func (f *installFlags) manifests() ([]*unstructured.Unstructured, error) {
	base := deploy.Install
	if f.namespaced {
		base = deploy.Namespaced
	}
	objs, err := decodeObjects(base)
	if err != nil {
		return nil, fmt.Errorf("reading the embedded install: %w", err)
	}
	if f.namespaced {
		if objs, err = forTenants(objs, f.tenants); err != nil {
			return nil, err
		}
	}
	if f.ui {
		ui, err := decodeObjects(deploy.UI)
		if err != nil {
			return nil, fmt.Errorf("reading the embedded UI install: %w", err)
		}
		objs = append(objs, ui...)
	}
	if image := installImage(f.image, version); image != "" {
		for _, obj := range objs {
			if err := replaceImage(obj, image); err != nil {
				return nil, err
			}
		}
	}
	return objs, nil
}

// releaseVersion is a release's version, as `make release VERSION=` takes it:
// v1.2.3, or v1.2.3-rc.1; not what `git describe` says of a commit after one
// (v1.2.3-4-gabcdef0).
var releaseVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-(alpha|beta|rc)\.?[0-9]+)?$`)

// installImage is the image the install runs instead of the embedded manifests'
// own: the one --image names; else, for a released tether, the agent of the
// same release (the tree's manifests name the image of the last release,
// which the binaries of a new one embed); else none, the manifests' own.
func installImage(flag, cliVersion string) string {
	switch {
	case flag != "":
		return flag
	case releaseVersion.MatchString(cliVersion):
		return agentImageRepository + ":" + cliVersion
	}
	return ""
}

// replaceImage makes every container of obj's pod template that runs
// agentImageRepository run image instead.
func replaceImage(obj *unstructured.Unstructured, image string) error {
	for _, field := range []string{"containers", "initContainers"} {
		path := []string{"spec", "template", "spec", field}
		containers, found, err := unstructured.NestedSlice(obj.Object, path...)
		if err != nil || !found {
			continue
		}
		for _, c := range containers {
			c, ok := c.(map[string]any)
			if !ok {
				continue
			}
			if img, _ := c["image"].(string); imageRepository(img) == agentImageRepository {
				c["image"] = image
			}
		}
		if err := unstructured.SetNestedSlice(obj.Object, containers, path...); err != nil {
			return fmt.Errorf("%s: setting the image: %w", describeRef(apply.RefOf(obj)), err)
		}
	}
	return nil
}

// imageRepository is image without its tag or digest.
func imageRepository(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}

// exportManifests prints objs as one YAML stream.
func exportManifests(w io.Writer, objs []*unstructured.Unstructured) error {
	fmt.Fprintf(w, "# tether install --export (tether %s). Apply with: kubectl apply --server-side -f <this file>\n", version)
	for _, obj := range objs {
		text, err := yaml.Marshal(obj.Object)
		if err != nil {
			return fmt.Errorf("%s: %w", describeRef(apply.RefOf(obj)), err)
		}
		if _, err := fmt.Fprintf(w, "---\n%s", text); err != nil {
			return err
		}
	}
	return nil
}

// applyObjects applies objs and prints one line per object.
func (f *installFlags) applyObjects(ctx context.Context, objs []*unstructured.Unstructured, w io.Writer) error {
	cfg, err := f.kube.restConfig("install")
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	// One request up front turns an unreachable cluster into one error.
	if _, err := dc.ServerVersion(); err != nil {
		return fmt.Errorf("reaching the cluster at %s: %w", cfg.Host, err)
	}
	c, err := clientFor(cfg)
	if err != nil {
		return err
	}
	opts := apply.Options{FieldManager: installFieldManager, Concurrency: 8, DryRunConcurrency: 8}
	cs, err := apply.NewManager(c, apply.ManagerOptions{}).ApplyAll(ctx, objs, opts)
	if cs != nil {
		for _, ch := range cs.Changes {
			fmt.Fprintf(w, "%s %s\n", kubectlName(ch.Object), ch.Action)
		}
	}
	if err != nil {
		return fmt.Errorf("installing: %w", err)
	}
	return nil
}

// kubectlName names ref as kubectl's apply does: kind.group/name.
func kubectlName(ref v1alpha1.ObjectRef) string {
	kind := strings.ToLower(ref.Kind)
	if ref.Group != "" {
		kind += "." + ref.Group
	}
	return kind + "/" + ref.Name
}

// describeRef names ref in an error: Kind/namespace/name.
func describeRef(ref v1alpha1.ObjectRef) string {
	if ref.Namespace == "" {
		return ref.Kind + "/" + ref.Name
	}
	return ref.Kind + "/" + ref.Namespace + "/" + ref.Name
}
