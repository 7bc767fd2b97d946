package main

import (
	"context"
	"flag"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/pflag"

	"tether.dev/tether/source"
)

// renderLimit is one of the render's bounds a flag sets, named and described
// once for the agent (tether controller) and the CLI (tether render), so that
// the CLI can render what the agent renders, at the agent's limits.
type renderLimit struct {
	name, usage string
	int64Value  *int64
	intValue    *int
}

func renderLimits(o *source.Options) []renderLimit {
	return []renderLimit{
		{name: "max-file-bytes", int64Value: &o.MaxFileSize, usage: "Largest file of a repository that rendering reads."},
		{name: "max-render-read-bytes", int64Value: &o.MaxTreeSize, usage: "Most bytes of files one render reads (the Sync's path and the kustomization roots it reaches; a chart and the archives under its charts/)."},
		{name: "max-rendered-bytes", int64Value: &o.MaxRenderedBytes, usage: "Most bytes (as JSON) the objects of one render may take, YAML aliases expanded."},
		{name: "max-rendered-objects", intValue: &o.MaxObjects, usage: "Most objects one render may produce."},
		{name: "max-yaml-nodes-per-file", intValue: &o.MaxYAMLNodesPerFile, usage: "Most YAML nodes one file may hold (a bound from its text, checked before parsing) or expand to through aliases."},
		{name: "max-yaml-nodes-per-render", intValue: &o.MaxYAMLNodesPerRender, usage: "Most YAML nodes the files one render reads may hold together."},
		{name: "render-memory-limit", int64Value: &o.RenderMemoryLimit, usage: "Most memory (bytes) one render's worker process may hold; past it the render fails with RenderLimitExceeded. Workers run beside the agent, in its container."},
	}
}

// bindRenderLimits binds the render's limits to the agent's flags.
func bindRenderLimits(fs *flag.FlagSet, o *source.Options) {
	d := source.DefaultOptions()
	for _, l := range renderLimits(o) {
		if l.int64Value != nil {
			fs.Int64Var(l.int64Value, l.name, *renderLimitOf(d, l.name).int64Value, l.usage)
		} else {
			fs.IntVar(l.intValue, l.name, *renderLimitOf(d, l.name).intValue, l.usage)
		}
	}
}

// bindRenderLimitsP binds the render's limits to a command's flags.
func bindRenderLimitsP(fs *pflag.FlagSet, o *source.Options) {
	d := source.DefaultOptions()
	for _, l := range renderLimits(o) {
		if l.int64Value != nil {
			fs.Int64Var(l.int64Value, l.name, *renderLimitOf(d, l.name).int64Value, l.usage+" As the agent's flag.")
		} else {
			fs.IntVar(l.intValue, l.name, *renderLimitOf(d, l.name).intValue, l.usage+" As the agent's flag.")
		}
	}
}

func renderLimitOf(o source.Options, name string) renderLimit {
	for _, l := range renderLimits(&o) {
		if l.name == name {
			return l
		}
	}
	panic("no render limit " + name)
}

// capabilityFlags are what a chart sees of a cluster that `tether render`
// has not: the version and API versions the agent reads from its cluster.
type capabilityFlags struct {
	kubeVersion string
	apiVersions []string
}

func (c *capabilityFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&c.kubeVersion, "kube-version", defaultKubeVersion(), "The Kubernetes version a chart sees as .Capabilities.KubeVersion (and its kubeVersion is checked against), as the agent reads it from its cluster; default the version of the Kubernetes client Tether links, as helm's.")
	fs.StringArrayVar(&c.apiVersions, "api-versions", nil, "An API version a chart sees in .Capabilities.APIVersions (\"monitoring.coreos.com/v1\", or with a kind, \"apps/v1/Deployment\"), beside the built-in ones; repeat for more, as helm template's --api-versions.")
}

// capabilities returns the function through which a chart reads them.
func (c *capabilityFlags) capabilities() func(context.Context) (source.Capabilities, error) {
	return func(context.Context) (source.Capabilities, error) {
		if c.kubeVersion != "" && !strings.HasPrefix(c.kubeVersion, "v") {
			c.kubeVersion = "v" + c.kubeVersion
		}
		caps := source.Capabilities{KubeVersion: c.kubeVersion}
		if len(c.apiVersions) > 0 {
			caps.APIVersions = append(source.DefaultAPIVersions(), c.apiVersions...)
		}
		return caps, nil
	}
}

// defaultKubeVersion is v1.MINOR.0 of the Kubernetes client Tether links
// (k8s.io/client-go v0.MINOR.x), as the helm binary sets its default.
func defaultKubeVersion() string {
	info, ok := debug.ReadBuildInfo()
	if ok {
		for _, dep := range info.Deps {
			if dep.Path != "k8s.io/client-go" {
				continue
			}
			var minor int
			if _, err := fmt.Sscanf(dep.Version, "v0.%d.", &minor); err == nil {
				return fmt.Sprintf("v1.%d.0", minor)
			}
		}
	}
	return ""
}
