// Command installgen renders Tether's kustomize installs into the single files that
// `kubectl apply --server-side -f` takes: deploy/default into deploy/install.yaml,
// deploy/overlays/namespaced into deploy/namespaced.yaml and the web UI deploy/ui
// into deploy/ui.yaml, and deploy/default again
// into the Helm chart deploy/chart (make generate); or, with -version, into a
// release directory with that version's image, the chart packaged beside an
// index.yaml, which makes the directory a chart repository (make release).
//
// With -image (make release REGISTRY=...), the agent's image is that reference,
// pinned to the digest `imagegen -push` printed, in every file and the chart.
//
// It runs kustomize in process (the kustomize/api module the agent already uses to
// render repositories), so the files are the same whichever kubectl is installed.
// It refuses an image that is untagged or tagged latest: a restarted pod must run
// the same agent as its peer.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// agentImage is the repository of the agent's image in deploy/base.
const agentImage = "ghcr.io/tether-dev/tether"

// outputs maps each kustomization to the file it renders to.
var outputs = []struct{ dir, file string }{
	{"deploy/default", "install.yaml"},
	{namespacedDir, "namespaced.yaml"},
	{uiDir, "ui.yaml"},
}

// releaseVersion is what -version accepts: a semantic version tag, never "latest"
// nor a dirty or untagged build.
var releaseVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// digestRef is what -image accepts: a repository pinned to a sha256 digest.
var digestRef = regexp.MustCompile(`^[a-z0-9][a-z0-9.:/_-]*@sha256:[0-9a-f]{64}$`)

func main() {
	root := flag.String("root", ".", "Root of the Tether checkout.")
	out := flag.String("out", "deploy", "Directory to write install.yaml and namespaced.yaml into.")
	version := flag.String("version", "", "Image tag of the agent, e.g. v0.2.0. Default: the tag deploy/base pins.")
	image := flag.String("image", "", "With -version: the agent's image pinned by digest (repo@sha256:...), as imagegen -push prints it.")
	flag.Parse()
	if err := run(*root, *out, *version, *image); err != nil {
		fmt.Fprintln(os.Stderr, "installgen:", err)
		os.Exit(1)
	}
}

func run(root, out, version, image string) error {
	if version != "" && !releaseVersion.MatchString(version) {
		return fmt.Errorf("version %q is not a release tag like v1.2.3", version)
	}
	if image != "" && (version == "" || !digestRef.MatchString(image)) {
		return fmt.Errorf("-image %q: want a reference pinned by digest (repo@sha256:<64 hex>) with -version", image)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	rendered := map[string]resmap.ResMap{}
	for _, o := range outputs {
		m, data, err := render(filepath.Join(root, o.dir), version, image)
		if err != nil {
			return fmt.Errorf("%s: %w", o.dir, err)
		}
		if err := os.WriteFile(filepath.Join(out, o.file), data, 0o644); err != nil { //nolint:gosec // a manifest meant to be published
			return err
		}
		rendered[o.dir] = m
	}
	monitoring, _, err := render(filepath.Join(root, monitoringDir), version, image)
	if err != nil {
		return fmt.Errorf("%s: %w", monitoringDir, err)
	}
	install := rendered["deploy/default"]
	parts := chartParts{ui: rendered[uiDir], monitoring: monitoring, namespaced: rendered[namespacedDir]}
	if version == "" {
		tag, err := pinnedTag(install)
		if err != nil {
			return err
		}
		return writeChart(install, parts, filepath.Join(out, chartDir), tag)
	}
	return packageChart(install, parts, out, version)
}

// render builds dir with kustomize, sets the agent's image tag to version (unless
// empty), or the whole reference to image (unless empty), and checks every image
// is pinned.
func render(dir, version, image string) (resmap.ResMap, []byte, error) {
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, nil, err
	}
	if err := eachImage(m, func(node *yaml.RNode) error { return pin(node, version, image) }); err != nil {
		return nil, nil, err
	}
	body, err := m.AsYaml()
	if err != nil {
		return nil, nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# GENERATED from %s by hack/installgen (make generate). DO NOT EDIT.\n", filepath.ToSlash(dir))
	b.WriteString("# Install or upgrade: kubectl apply --server-side -f <this file>. See docs/install.md.\n---\n")
	b.Write(body)
	return m, b.Bytes(), nil
}

// pinnedTag is the tag of the agent's image in m.
func pinnedTag(m resmap.ResMap) (string, error) {
	var tag string
	err := eachImage(m, func(image *yaml.RNode) error {
		if name, t := splitImage(yaml.GetValue(image)); name == agentImage {
			tag = t
		}
		return nil
	})
	if err == nil && !releaseVersion.MatchString(tag) {
		err = fmt.Errorf("the agent's image tag %q is not a release tag like v1.2.3", tag)
	}
	return tag, err
}

// eachImage calls fn with the image field of every container and init container of
// every workload's pod template.
func eachImage(m resmap.ResMap, fn func(*yaml.RNode) error) error {
	for _, r := range m.Resources() {
		for _, list := range []string{"containers", "initContainers"} {
			containers, err := r.Pipe(yaml.Lookup("spec", "template", "spec", list))
			if err != nil || containers == nil {
				continue
			}
			elems, err := containers.Elements()
			if err != nil {
				return err
			}
			for _, c := range elems {
				if image := c.Field("image"); image != nil {
					if err := fn(image.Value); err != nil {
						return fmt.Errorf("%s %s: %w", r.GetKind(), r.GetName(), err)
					}
				}
			}
		}
	}
	return nil
}

// pin sets the agent image's tag to version, or its whole reference to pinned,
// where one is given, and refuses an image that names no tag or digest, or the
// tag latest.
func pin(image *yaml.RNode, version, pinned string) error {
	ref := yaml.GetValue(image)
	name, tag := splitImage(ref)
	switch {
	case pinned != "" && name == agentImage:
		name, tag = splitImage(pinned)
		image.YNode().Value = pinned
	case version != "" && name == agentImage:
		tag = version
		image.YNode().Value = name + ":" + tag
	}
	if tag == "" || tag == "latest" {
		return fmt.Errorf("image %q is not pinned to a version", ref)
	}
	return nil
}

// splitImage splits an image reference into its name and its tag or digest.
func splitImage(ref string) (name, tag string) {
	if name, digest, ok := strings.Cut(ref, "@"); ok {
		return name, digest
	}
	slash := strings.LastIndex(ref, "/")
	if colon := strings.LastIndex(ref, ":"); colon > slash {
		return ref[:colon], ref[colon+1:]
	}
	return ref, ""
}
