package main

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// chartDir is where make generate writes the chart, under -out.
const chartDir = "chart"

// installNamespace is the namespace deploy/base installs into. The chart puts
// every object in the release's namespace instead.
const installNamespace = "tether-system"

// chartHeader heads every generated file of the chart.
const chartHeader = "# GENERATED from deploy/ by hack/installgen (make generate). DO NOT EDIT.\n"

// Placeholders stand, in the objects as kustomize wrote them, for what the
// chart's values set. Each is swapped for its template once the object is YAML
// (templates).
const (
	imageHolder        = "TETHER_CHART_IMAGE"
	replicasHolder     = "TETHER_CHART_REPLICAS"
	resourcesHolder    = "TETHER_CHART_RESOURCES"
	nodeSelectorHolder = "TETHER_CHART_NODE_SELECTOR"
	tolerationsHolder  = "TETHER_CHART_TOLERATIONS"
	affinityHolder     = "TETHER_CHART_AFFINITY"
	spreadHolder       = "TETHER_CHART_TOPOLOGY_SPREAD"
	priorityHolder     = "TETHER_CHART_PRIORITY_CLASS"
	podAnnotHolder     = "TETHER_CHART_POD_ANNOTATIONS"
	saAnnotHolder      = "TETHER_CHART_SA_ANNOTATIONS"
	extraArgsHolder    = "TETHER_CHART_EXTRA_ARGS"
	extraEnvHolder     = "TETHER_CHART_EXTRA_ENV"
)

// imageTemplate names the agent's image as the values say.
const imageTemplate = "{{ .Values.image.repository }}{{ with .Values.image.digest }}@{{ . }}{{ else }}:{{ .Values.image.tag | default .Chart.AppVersion }}{{ end }}"

// chartValues are the chart's values at their defaults: what deploy/default
// installs. values.schema.json (chartSchema) refuses any other key.
type chartValues struct {
	Image struct {
		Repository string `yaml:"repository"`
		// Tag is empty: the chart's appVersion.
		Tag string `yaml:"tag"`
		// Digest, where set (a release pushed to a registry), pins the image
		// and wins over the tag.
		Digest string `yaml:"digest"`
	} `yaml:"image"`
	ReplicaCount int            `yaml:"replicaCount"`
	Resources    map[string]any `yaml:"resources"`
	// Where the agent's pods run: the Deployment's own nodeSelector and
	// topologySpreadConstraints are the defaults.
	NodeSelector              map[string]any `yaml:"nodeSelector"`
	Tolerations               []any          `yaml:"tolerations"`
	Affinity                  map[string]any `yaml:"affinity"`
	TopologySpreadConstraints []any          `yaml:"topologySpreadConstraints"`
	PriorityClassName         string         `yaml:"priorityClassName"`
	// PodAnnotations are added to the pods' (a mesh's, a scraper's).
	PodAnnotations map[string]any `yaml:"podAnnotations"`
	ServiceAccount struct {
		// Annotations are added to the agent's ServiceAccount: workload
		// identity for git and registry credentials (eks.amazonaws.com/role-arn,
		// iam.gke.io/gcp-service-account, azure.workload.identity/client-id).
		Annotations map[string]any `yaml:"annotations"`
	} `yaml:"serviceAccount"`
	// ExtraArgs are appended to the controller's arguments (docs/cli.md's
	// `tether controller` flags), ExtraEnv to its environment.
	ExtraArgs []any `yaml:"extraArgs"`
	ExtraEnv  []any `yaml:"extraEnv"`
	// The parts beside deploy/default (chartParts), each off by default.
	Namespaced struct {
		// Enabled installs as deploy/overlays/namespaced does: the agent serves
		// the Tenants' namespaces only, and every Sync acts as an account of
		// its own namespace.
		Enabled bool     `yaml:"enabled"`
		Tenants []string `yaml:"tenants"`
	} `yaml:"namespaced"`
	UI struct {
		// Enabled installs the web UI for many users (deploy/ui).
		Enabled bool `yaml:"enabled"`
	} `yaml:"ui"`
	Monitoring struct {
		ServiceMonitor chartSwitch `yaml:"serviceMonitor"`
		PrometheusRule chartSwitch `yaml:"prometheusRule"`
		Dashboard      chartSwitch `yaml:"dashboard"`
		// Labels are added to each of them (kube-prometheus-stack selects
		// rules and monitors by its release's name: release: NAME).
		Labels map[string]any `yaml:"labels"`
	} `yaml:"monitoring"`
}

// chartSwitch turns one object of deploy/monitoring on.
type chartSwitch struct {
	Enabled bool `yaml:"enabled"`
}

// chartTemplate is how one placeholder becomes a template: a block under a key
// (with its values, or nothing when they are empty), a scalar, or items added
// to a list or a map that the object already has.
type chartTemplate struct {
	holder, values string
	form           int
}

// Forms of chartTemplate.
const (
	blockForm  = iota // "key: HOLDER": key and the values below it, if any
	scalarForm        // "key: HOLDER": key and the value quoted, if any
	itemsForm         // "- HOLDER" or "HOLDER: HOLDER": the values' items there, if any
)

// agentTemplates are the agent's Deployment's values, ServiceAccount's are
// saTemplates.
var (
	agentTemplates = []chartTemplate{
		{resourcesHolder, ".Values.resources", blockForm},
		{nodeSelectorHolder, ".Values.nodeSelector", blockForm},
		{tolerationsHolder, ".Values.tolerations", blockForm},
		{affinityHolder, ".Values.affinity", blockForm},
		{spreadHolder, ".Values.topologySpreadConstraints", blockForm},
		{priorityHolder, ".Values.priorityClassName", scalarForm},
		{podAnnotHolder, ".Values.podAnnotations", itemsForm},
		{extraArgsHolder, ".Values.extraArgs", itemsForm},
		{extraEnvHolder, ".Values.extraEnv", itemsForm},
	}
	saTemplates = []chartTemplate{{saAnnotHolder, ".Values.serviceAccount.annotations", itemsForm}}
)

// writeChart writes Tether as a Helm chart into dir, from the same objects
// deploy/default renders to: the CRD in crds/, every other object but the
// Namespace (Helm installs into a namespace that exists, or that
// `helm install --create-namespace` makes) as a template in the release's
// namespace, with the agent's image, replicas and resources as values. At its
// default values, in the namespace tether-system, it renders the objects of
// install.yaml (TestTheChartRendersTheInstall).
func writeChart(m resmap.ResMap, parts chartParts, dir, version string) error {
	values, err := chartDefaults(m)
	if err != nil {
		return err
	}
	adds, err := readNamespaced(m, parts.namespaced)
	if err != nil {
		return err
	}
	agentRef, err := agentImageRef(m)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	for _, sub := range []string{"crds", "templates"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
	}
	for _, r := range m.Resources() {
		if r.GetKind() == "Namespace" {
			continue
		}
		name, body, err := chartFile(r, adds)
		if err != nil {
			return fmt.Errorf("%s %s: %w", r.GetKind(), r.GetName(), err)
		}
		if err := writeGenerated(filepath.Join(dir, name), body); err != nil {
			return err
		}
	}
	files, err := partFiles(parts, adds, agentRef)
	if err != nil {
		return err
	}
	for name, text := range files {
		if err := writeGenerated(filepath.Join(dir, name), []byte(text)); err != nil {
			return err
		}
	}
	vals, err := yaml.Marshal(values)
	if err != nil {
		return err
	}
	if err := writeGenerated(filepath.Join(dir, "values.yaml"), vals); err != nil {
		return err
	}
	if err := writeSchema(dir); err != nil {
		return err
	}
	return writeGenerated(filepath.Join(dir, "Chart.yaml"), chartMetadata(version))
}

// chartMetadata is Chart.yaml for the agent's version tag (v0.1.0 makes chart
// version 0.1.0, appVersion v0.1.0).
func chartMetadata(version string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v2
name: tether
description: Tether, a GitOps agent that keeps a cluster equal to git repositories.
type: application
version: %s
appVersion: %q
home: https://github.com/tether-dev/tether
`, strings.TrimPrefix(version, "v"), version))
}

// chartDefaults reads the chart's default values from the agent's Deployment.
func chartDefaults(m resmap.ResMap) (*chartValues, error) {
	var v chartValues
	for _, r := range m.Resources() {
		if !isAgent(r) {
			continue
		}
		c, err := agentContainer(r)
		if err != nil {
			return nil, err
		}
		name, tag := splitImage(yaml.GetValue(c.Field("image").Value))
		v.Image.Repository = name
		if strings.HasPrefix(tag, "sha256:") {
			v.Image.Digest = tag
		}
		replicas, err := r.GetFieldValue("spec.replicas")
		if err != nil {
			return nil, fmt.Errorf("the agent's Deployment: %w", err)
		}
		n, ok := replicas.(int)
		if !ok {
			return nil, fmt.Errorf("the agent's Deployment: spec.replicas is %T", replicas)
		}
		v.ReplicaCount = n
		res, err := c.Pipe(yaml.Lookup("resources"))
		if err != nil || res == nil {
			return nil, errors.New("the agent's container has no resources")
		}
		if err := res.YNode().Decode(&v.Resources); err != nil {
			return nil, err
		}
		if err := decodeField(r, &v.NodeSelector, "spec", "template", "spec", "nodeSelector"); err != nil {
			return nil, err
		}
		if err := decodeField(r, &v.TopologySpreadConstraints, "spec", "template", "spec", "topologySpreadConstraints"); err != nil {
			return nil, err
		}
	}
	if v.Image.Repository == "" {
		return nil, errors.New("no Deployment tether with a container controller")
	}
	return &v, nil
}

// decodeField decodes the field at path of r, if r has it, into v.
func decodeField(r *resource.Resource, v any, path ...string) error {
	node, err := r.Pipe(yaml.Lookup(path...))
	if err != nil || node == nil {
		return err
	}
	return node.YNode().Decode(v)
}

// isAgent reports whether r is the agent's Deployment.
func isAgent(r *resource.Resource) bool {
	return r.GetKind() == "Deployment" && r.GetName() == "tether"
}

// agentContainer is the controller container of the agent's Deployment.
func agentContainer(r *resource.Resource) (*yaml.RNode, error) {
	c, err := r.Pipe(yaml.Lookup("spec", "template", "spec", "containers"), yaml.MatchElement("name", "controller"))
	if err != nil || c == nil {
		return nil, errors.New("the agent's Deployment has no container controller")
	}
	return c, nil
}

// agentImageRef is the agent's image as deploy/default names it.
func agentImageRef(m resmap.ResMap) (string, error) {
	for _, r := range m.Resources() {
		if isAgent(r) {
			c, err := agentContainer(r)
			if err != nil {
				return "", err
			}
			return yaml.GetValue(c.Field("image").Value), nil
		}
	}
	return "", errors.New("no Deployment tether")
}

// chartFile turns one object into its file in the chart: crds/NAME.yaml for a
// CRD, as it is; templates/KIND-NAME.yaml for every other object, with its
// namespace the release's and the agent's settings read from the values.
func chartFile(r *resource.Resource, adds *namespacedAdds) (string, []byte, error) {
	r = r.DeepCopy()
	if r.GetKind() == "CustomResourceDefinition" {
		body, err := r.AsYAML()
		return filepath.Join("crds", r.GetName()+".yaml"), body, err
	}
	if err := holdValues(r); err != nil {
		return "", nil, err
	}
	body, err := r.AsYAML()
	if err != nil {
		return "", nil, err
	}
	if bytes.Contains(body, []byte("{{")) {
		return "", nil, errors.New("holds {{, which a template would read as an action")
	}
	text := strings.ReplaceAll(string(body), installNamespace, "{{ .Release.Namespace }}")
	var templates []chartTemplate
	switch {
	case isAgent(r):
		text = strings.Replace(text, imageHolder, imageTemplate, 1)
		text = strings.Replace(text, replicasHolder, "{{ .Values.replicaCount }}", 1)
		if text, err = replaceLine(text, namespacedArgsHolder, adds.argsTemplate); err != nil {
			return "", nil, err
		}
		templates = agentTemplates
	case isAgentAccount(r):
		templates = saTemplates
	case isFlowSchema(r):
		if text, err = replaceLine(text, namespacedSubjectsHolder, adds.subjectsTemplate); err != nil {
			return "", nil, err
		}
	}
	for _, tmpl := range templates {
		if text, err = tmpl.apply(text); err != nil {
			return "", nil, err
		}
	}
	if adds.removed[identity(r)] {
		text = guarded("not "+namespacedOn, text)
	}
	name := strings.ToLower(r.GetKind() + "-" + r.GetName() + ".yaml")
	return filepath.Join("templates", name), []byte(text), nil
}

// holdValues puts the placeholders where the agent's Deployment and
// ServiceAccount have what the values set.
func holdValues(r *resource.Resource) error {
	if isFlowSchema(r) {
		return r.PipeE(yaml.Lookup("spec", "rules", "0", "subjects"), yaml.Append(yaml.NewScalarRNode(namespacedSubjectsHolder).YNode()))
	}
	if isAgentAccount(r) {
		return r.PipeE(yaml.LookupCreate(yaml.MappingNode, "metadata", "annotations"), yaml.SetField(saAnnotHolder, yaml.NewScalarRNode(saAnnotHolder)))
	}
	if !isAgent(r) {
		return nil
	}
	if err := r.PipeE(yaml.Lookup("spec"), yaml.SetField("replicas", yaml.NewScalarRNode(replicasHolder))); err != nil {
		return err
	}
	if err := r.PipeE(yaml.LookupCreate(yaml.MappingNode, "spec", "template", "metadata", "annotations"), yaml.SetField(podAnnotHolder, yaml.NewScalarRNode(podAnnotHolder))); err != nil {
		return err
	}
	pod, err := r.Pipe(yaml.Lookup("spec", "template", "spec"))
	if err != nil || pod == nil {
		return errors.New("the agent's Deployment has no pod template")
	}
	for field, holder := range map[string]string{
		"nodeSelector": nodeSelectorHolder, "tolerations": tolerationsHolder, "affinity": affinityHolder,
		"topologySpreadConstraints": spreadHolder, "priorityClassName": priorityHolder,
	} {
		if err := pod.PipeE(yaml.SetField(field, yaml.NewScalarRNode(holder))); err != nil {
			return err
		}
	}
	c, err := agentContainer(r)
	if err != nil {
		return err
	}
	if err := c.PipeE(yaml.SetField("image", yaml.NewScalarRNode(imageHolder))); err != nil {
		return err
	}
	// What the namespaced install adds, before what the values add.
	if err := c.PipeE(yaml.LookupCreate(yaml.SequenceNode, "args"), yaml.Append(yaml.NewScalarRNode(namespacedArgsHolder).YNode())); err != nil {
		return err
	}
	for list, holder := range map[string]string{"args": extraArgsHolder, "env": extraEnvHolder} {
		if err := c.PipeE(yaml.LookupCreate(yaml.SequenceNode, list), yaml.Append(yaml.NewScalarRNode(holder).YNode())); err != nil {
			return err
		}
	}
	return c.PipeE(yaml.SetField("resources", yaml.NewScalarRNode(resourcesHolder)))
}

// isAgentAccount reports whether r is the agent's ServiceAccount.
func isAgentAccount(r *resource.Resource) bool {
	return r.GetKind() == "ServiceAccount" && r.GetName() == "tether"
}

// apply swaps the line of t's placeholder in text for t's template: the line
// "KEY: HOLDER" for KEY and the values below it, or nothing when the values are
// empty (blockForm, scalarForm); the line "- HOLDER" or "HOLDER: HOLDER" for the values'
// items at that indentation, or nothing (itemsForm).
func (t chartTemplate) apply(text string) (string, error) {
	return replaceLine(text, t.holder, func(line string, indent int) string {
		before, _, _ := strings.Cut(line, t.holder)
		key := strings.Repeat(" ", indent) + strings.TrimSpace(before)
		// Each block starts with "{{-", which eats the newline before the line.
		switch t.form {
		case blockForm:
			return fmt.Sprintf("{{- with %s }}\n%s{{ toYaml . | nindent %d }}\n{{- end }}", t.values, key, indent+2)
		case scalarForm:
			return fmt.Sprintf("{{- with %s }}\n%s {{ quote . }}\n{{- end }}", t.values, key)
		default:
			return fmt.Sprintf("{{- with %s }}{{ toYaml . | nindent %d }}{{ end }}", t.values, indent)
		}
	})
}

// writeGenerated writes a generated file of the chart, headed as generated.
func writeGenerated(path string, body []byte) error {
	return os.WriteFile(path, append([]byte(chartHeader), body...), 0o644) //nolint:gosec // a chart meant to be published
}

// packageChart writes the chart for version into out as a package
// (tether-VERSION.tgz) and an index.yaml naming it, so that out served over
// http(s) is a chart repository.
func packageChart(m resmap.ResMap, parts chartParts, out, version string) error {
	dir, err := os.MkdirTemp("", "tether-chart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := writeChart(m, parts, filepath.Join(dir, "tether"), version); err != nil {
		return err
	}
	ch, err := loader.LoadDir(filepath.Join(dir, "tether"))
	if err != nil {
		return err
	}
	pkg, err := chartutil.Save(ch, out)
	if err != nil {
		return err
	}
	return writeIndex(out, ch.Metadata.Name, ch.Metadata.Version, ch.Metadata.AppVersion, pkg)
}

// chartIndex is a chart repository's index.yaml, as Helm reads it, for the
// one chart a release publishes. (Helm's own repo package would write it too,
// but brings its downloaders, plugin runtime and registry client into the
// module graph for these few lines.)
type chartIndex struct {
	APIVersion string                         `yaml:"apiVersion"`
	Entries    map[string][]chartIndexVersion `yaml:"entries"`
	Generated  string                         `yaml:"generated"`
}

type chartIndexVersion struct {
	APIVersion string   `yaml:"apiVersion"`
	Name       string   `yaml:"name"`
	Version    string   `yaml:"version"`
	AppVersion string   `yaml:"appVersion"`
	Type       string   `yaml:"type"`
	Created    string   `yaml:"created"`
	Digest     string   `yaml:"digest"`
	URLs       []string `yaml:"urls"`
}

// writeIndex writes out/index.yaml naming the package pkg: its URL relative
// to the index, its SHA-256 digest.
func writeIndex(out, name, version, appVersion, pkg string) error {
	data, err := os.ReadFile(pkg)
	if err != nil {
		return err
	}
	now := time.Now().UTC().Format(time.RFC3339)
	index := chartIndex{APIVersion: "v1", Generated: now, Entries: map[string][]chartIndexVersion{name: {{
		APIVersion: "v2", Name: name, Version: version, AppVersion: appVersion, Type: "application",
		Created: now, Digest: fmt.Sprintf("%x", sha256.Sum256(data)), URLs: []string{filepath.Base(pkg)},
	}}}}
	body, err := yaml.Marshal(index)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "index.yaml"), body, 0o644) //nolint:gosec // a chart repository meant to be published
}
