package render

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/ignore"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/result"
)

// ChartFile is the file that makes a directory a Helm chart.
const ChartFile = "Chart.yaml"

// Helm says how a path holding a Helm chart renders (a Sync's spec.helm, its
// name and its destination). A path without a Chart.yaml ignores it. The zero
// value renders a chart with its own values, released under the chart's name.
type Helm struct {
	// ReleaseName is .Release.Name; empty means the chart's name.
	ReleaseName string
	// Namespace is .Release.Namespace; empty means "default".
	Namespace string
	// ValuesFiles are values files relative to the chart's directory, merged in
	// order over the chart's values.yaml.
	ValuesFiles []string
	// ValuesFrom are values read by the caller (from ConfigMaps and Secrets),
	// merged in order over ValuesFiles.
	ValuesFrom []Values
	// Values are inline values as a JSON object, merged last.
	Values []byte
	// SkipCRDs leaves out the chart's crds/ directories.
	SkipCRDs bool
	// Capabilities reads the cluster's version and API versions for
	// .Capabilities. It is called once per render of a chart, and never for a
	// render the cache answers or a path that holds no chart. Nil renders with
	// Helm's defaults.
	Capabilities func(ctx context.Context) (Capabilities, error)
}

// Values are values as YAML with the name of where they came from, for messages.
type Values struct {
	// Name says where the values came from ("ConfigMap/web-values key values.yaml").
	Name string
	// YAML is the values document.
	YAML []byte
	// Secret says the values came from a Secret: none of them may appear in
	// a message (RedactSecretValues).
	Secret bool
}

// Capabilities are what a chart sees of the cluster as .Capabilities.
type Capabilities struct {
	// KubeVersion is the API server's version ("v1.34.1").
	KubeVersion string
	// APIVersions are the group versions the API server serves ("apps/v1"), and
	// may name kinds too ("apps/v1/Deployment").
	APIVersions []string
}

// Digest identifies what of h changes a render: the render cache's key holds it.
// Capabilities are read only when a chart renders, and are not part of it.
func (h Helm) Digest() string {
	sum := sha256.New()
	write := func(s string) {
		fmt.Fprintf(sum, "%d:%s", len(s), s)
	}
	write(h.ReleaseName)
	write(h.Namespace)
	write(fmt.Sprint(len(h.ValuesFiles), h.SkipCRDs))
	for _, f := range h.ValuesFiles {
		write(f)
	}
	for _, v := range h.ValuesFrom {
		write(v.Name)
		write(string(v.YAML))
	}
	write(string(h.Values))
	return hex.EncodeToString(sum.Sum(nil))
}

// IsChart reports whether dir of fs holds a Helm chart.
func IsChart(fs *FS, dir string) bool {
	p := path.Join(dir, ChartFile)
	return fs.Exists(p) && !fs.IsDir(p)
}

// helmRender is one chart's render: what renderChart returns besides objects.
type helmRender struct {
	objs []*unstructured.Unstructured
	size int64
}

// renderChart renders the chart at dir of fs (absolute, in fs) as `helm template`
// would, within opts: its files loaded from memory (the .helmignore applied),
// every dependency vendored under charts/ (a missing one fails, naming it:
// rendering never reaches the network), the values layered, the templates
// executed within guards (helm_guard.go), and their output decoded within
// the render's budgets. The chart's CRDs come first unless h.SkipCRDs; Helm hooks
// are kept with their annotations, which plan.OrderingOf reads (pre-install runs
// PreSync, and so on). Errors are *RenderError naming the file relative to
// the repository root.
func renderChart(fs *FS, dir string, h Helm, caps *common.Capabilities, opts Options) (*helmRender, error) {
	rel := strings.TrimPrefix(dir, "/")
	files, err := chartFiles(fs, dir)
	if err != nil {
		return nil, &result.RenderError{File: rel, Err: err}
	}
	if files, err = expandArchives(files, rel, opts); err != nil {
		return nil, err
	}
	nodes := newNodeBudget(DirOptions{MaxYAMLNodesPerFile: opts.MaxYAMLNodesPerFile, MaxYAMLNodesPerRender: opts.MaxYAMLNodesPerRender})
	for _, f := range files {
		if isYAMLName(f.Name) {
			if _, err := nodes.file(f.Data); err != nil {
				return nil, &result.RenderError{File: path.Join(rel, f.Name), Reason: reasonOf(err), Err: err}
			}
		}
	}
	for _, f := range files {
		// Helm's loader would refuse the chart's values naming Chart.yaml, in
		// its decoder's words.
		if f.Name == "values.yaml" {
			if _, err := decodeValues(f.Data); err != nil {
				return nil, &result.RenderError{File: path.Join(rel, f.Name), Reason: reasonOf(err), Err: err}
			}
		}
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, &result.RenderError{File: path.Join(rel, ChartFile), Err: fmt.Errorf("loading the chart: %w", err)}
	}
	if err := checkDependencies(c); err != nil {
		return nil, &result.RenderError{File: path.Join(rel, ChartFile), Err: err}
	}
	if kv := c.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return nil, &result.RenderError{File: path.Join(rel, ChartFile), Err: fmt.Errorf("the chart requires kubeVersion %s, which Kubernetes %s is not (as helm says)", kv, caps.KubeVersion.String())}
	}
	vals, err := layerValues(fs, dir, rel, h, nodes)
	if err != nil {
		return nil, err
	}
	if err := chartutil.ProcessDependencies(c, vals); err != nil {
		return nil, &result.RenderError{File: path.Join(rel, ChartFile), Err: fmt.Errorf("processing dependencies: %w", err)}
	}
	top, err := commonutil.ToRenderValuesWithSchemaValidation(c, vals, common.ReleaseOptions{
		Name: releaseName(h, c), Namespace: namespaceOf(h), Revision: 1, IsInstall: true,
	}, caps, false)
	if err != nil {
		return nil, &result.RenderError{File: rel, Err: fmt.Errorf("values: %w", err)}
	}
	out, err := executeTemplates(c, top, opts)
	if err != nil {
		return nil, &result.RenderError{File: rel, Reason: reasonOf(err), Err: err}
	}
	return decodeChart(c, out, rel, h, opts, nodes)
}

// reasonOf is the reason of a render failure: RenderLimitExceeded for one over
// a bound, else none (RenderFailed).
func reasonOf(err error) string {
	var re *result.RenderError
	if errors.As(err, &re) {
		return re.Reason
	}
	var over *overBudget
	if errors.As(err, &over) {
		return v1alpha1.ReasonRenderLimitExceeded
	}
	return ""
}

// isYAMLName reports whether a chart file is YAML that a parser will read.
func isYAMLName(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml":
		return true
	}
	return false
}

// chartFiles reads every file below dir as the chart's files, named relative to
// dir, leaving out what the chart's .helmignore names, as `helm template`
// leaves it out of a chart directory. The tree copier has bounded them already
// in count and bytes (MaxTreeEntries, MaxFileSize, MaxTreeSize).
func chartFiles(fs *FS, dir string) ([]*archive.BufferedFile, error) {
	rules, err := helmIgnore(fs, dir)
	if err != nil {
		return nil, err
	}
	var files []*archive.BufferedFile
	err = fs.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
		if name == "" {
			return nil
		}
		if rules.Ignore(name, info) {
			if info.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if info.IsDir() {
			return nil
		}
		data, err := fs.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, &archive.BufferedFile{Name: name, Data: data})
		return nil
	})
	return files, err
}

// helmIgnore reads the chart's .helmignore, if any.
func helmIgnore(fs *FS, dir string) (*ignore.Rules, error) {
	data, err := fs.ReadFile(path.Join(dir, ignore.HelmIgnore))
	if err != nil {
		return ignore.Empty(), nil //nolint:nilerr // no .helmignore ignores nothing
	}
	rules, err := ignore.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ignore.HelmIgnore, err)
	}
	return rules, nil
}

// ErrChartDependencyMissing is wrapped by the result.RenderError of a chart whose
// Chart.yaml names a dependency that is not vendored under its charts/:
// rendering never downloads one.
var ErrChartDependencyMissing = errors.New("dependency not vendored in charts/ (Tether renders charts without network: run `helm dependency build` and commit charts/)")

// checkDependencies fails naming every dependency of c (and of its vendored
// dependencies) that is not vendored.
func checkDependencies(c *chart.Chart) error {
	var missing []string
	var walk func(c *chart.Chart)
	walk = func(c *chart.Chart) {
		have := map[string]bool{}
		for _, d := range c.Dependencies() {
			have[d.Name()] = true
		}
		for _, d := range c.Metadata.Dependencies {
			if d != nil && !have[d.Name] {
				missing = append(missing, fmt.Sprintf("%s (%s %s) of chart %s", d.Name, d.Repository, d.Version, c.Name()))
			}
		}
		for _, d := range c.Dependencies() {
			walk(d)
		}
	}
	walk(c)
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrChartDependencyMissing, strings.Join(missing, ", "))
}

// layerValues merges the values of h over one another: valuesFiles in order,
// then valuesFrom in order, then the inline values. The chart's own values.yaml
// lies under all of them (Helm coalesces it when it renders).
func layerValues(fs *FS, dir, rel string, h Helm, nodes *nodeBudget) (map[string]any, error) {
	vals := map[string]any{}
	for _, f := range h.ValuesFiles {
		name, err := valuesFilePath(dir, f)
		if err != nil {
			return nil, &result.RenderError{File: path.Join(rel, f), Err: err}
		}
		data, err := fs.ReadFile(name)
		if err != nil {
			return nil, &result.RenderError{File: path.Join(rel, f), Err: errors.New("spec.helm.valuesFiles names a file the chart's directory does not hold")}
		}
		layer, err := readValues(data, nodes)
		if err != nil {
			return nil, &result.RenderError{File: path.Join(rel, f), Reason: reasonOf(err), Err: err}
		}
		vals = loader.MergeMaps(vals, layer)
	}
	for _, v := range h.ValuesFrom {
		layer, err := readValues(v.YAML, nodes)
		if err != nil {
			return nil, &result.RenderError{File: rel, Reason: reasonOf(err), Err: fmt.Errorf("spec.helm.valuesFrom %s: %w", v.Name, err)}
		}
		vals = loader.MergeMaps(vals, layer)
	}
	if len(h.Values) > 0 {
		var layer map[string]any
		if err := json.Unmarshal(h.Values, &layer); err != nil {
			return nil, &result.RenderError{File: rel, Err: fmt.Errorf("spec.helm.values: %w", err)}
		}
		vals = loader.MergeMaps(vals, layer)
	}
	return vals, nil
}

// valuesFilePath resolves a valuesFiles entry inside the chart's directory.
func valuesFilePath(dir, f string) (string, error) {
	if path.IsAbs(f) {
		return "", errors.New("spec.helm.valuesFiles must be relative to the chart's directory")
	}
	clean := path.Clean(f)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", errors.New("spec.helm.valuesFiles must stay inside the chart's directory")
	}
	return path.Join(dir, clean), nil
}

// readValues reads one values document within the node budget: a mapping, or
// nothing.
func readValues(data []byte, nodes *nodeBudget) (map[string]any, error) {
	if _, err := nodes.file(data); err != nil {
		return nil, err
	}
	return decodeValues(data)
}

// decodeValues decodes a values document: a mapping, or nothing. A document
// that is YAML but not a mapping says what it is instead of the decoder's Go
// types.
func decodeValues(data []byte) (map[string]any, error) {
	vals := map[string]any{}
	err := sigsyaml.Unmarshal(data, &vals)
	if err == nil {
		return vals, nil
	}
	var doc any
	if sigsyaml.Unmarshal(data, &doc) == nil {
		return nil, fmt.Errorf("values must be a YAML mapping, not %s", yamlKindOf(doc))
	}
	return nil, fmt.Errorf("values are not a YAML mapping: %w", kubectlYAMLError(err))
}

// yamlKindOf names the kind of a decoded YAML value as a user wrote it.
func yamlKindOf(v any) string {
	switch v.(type) {
	case []any:
		return "a sequence"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, int64, int:
		return "a number"
	default:
		return "a scalar"
	}
}

func releaseName(h Helm, c *chart.Chart) string {
	if h.ReleaseName != "" {
		return h.ReleaseName
	}
	return c.Name()
}

func namespaceOf(h Helm) string {
	if h.Namespace != "" {
		return h.Namespace
	}
	return "default"
}

// capabilitiesOf turns what the caller read of the cluster into Helm's form;
// the zero value is Helm's defaults.
func capabilitiesOf(c Capabilities) (*common.Capabilities, error) {
	caps := common.DefaultCapabilities.Copy()
	if c.KubeVersion != "" {
		kv, err := common.ParseKubeVersion(c.KubeVersion)
		if err != nil {
			return nil, fmt.Errorf("the cluster's version %q: %w", c.KubeVersion, err)
		}
		caps.KubeVersion = *kv
	}
	if len(c.APIVersions) > 0 {
		caps.APIVersions = append(common.VersionSet{}, c.APIVersions...)
	}
	return caps, nil
}

// decodeChart turns the templates' output into objects, the CRDs first: each
// template's documents decoded as any manifest file is (within the byte and
// node budgets), Helm hooks among them, NOTES.txt and partials not
// read, in the order of the templates' names so that the result is stable.
func decodeChart(c *chart.Chart, out map[string]string, rel string, h Helm, opts Options, nodes *nodeBudget) (*helmRender, error) {
	budget := &byteBudget{max: opts.MaxRenderedBytes}
	r := &helmRender{}
	if !h.SkipCRDs {
		for _, crd := range c.CRDObjects() {
			objs, err := decodeManifests(crd.File.Data, budget, nodes, refuseOthers)
			if err != nil {
				return nil, &result.RenderError{File: path.Join(rel, chartRelative(crd.Filename)), Reason: reasonOf(err), Err: err}
			}
			r.objs = append(r.objs, objs...)
		}
	}
	names := make([]string, 0, len(out))
	for name := range out {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !isManifestTemplate(name) || strings.TrimSpace(out[name]) == "" {
			continue
		}
		objs, err := decodeManifests([]byte(out[name]), budget, nodes, refuseOthers)
		if err != nil {
			return nil, &result.RenderError{File: path.Join(rel, chartRelative(name)), Reason: reasonOf(err), Err: fmt.Errorf("rendered template: %w", err)}
		}
		r.objs = append(r.objs, objs...)
	}
	if opts.MaxObjects > 0 && len(r.objs) > opts.MaxObjects {
		return nil, &result.RenderError{File: rel, Reason: v1alpha1.ReasonRenderLimitExceeded, Err: fmt.Errorf("renders %d objects, over the limit of %d", len(r.objs), opts.MaxObjects)}
	}
	if err := checkDuplicates(r.objs); err != nil {
		return nil, &result.RenderError{File: rel, Err: err}
	}
	r.size = budget.used
	return r, nil
}

// chartRelative turns a template's name ("podinfo/templates/web.yaml",
// "podinfo/charts/lib/templates/x.yaml") into its path in the chart's
// directory.
func chartRelative(name string) string {
	if _, after, ok := strings.Cut(name, "/"); ok {
		return after
	}
	return name
}

// isManifestTemplate reports whether a template's output holds manifests, as
// Helm reads it: every template but NOTES.txt and partials (_helpers.tpl).
func isManifestTemplate(name string) bool {
	base := path.Base(name)
	return !strings.HasPrefix(base, "_") && !strings.HasSuffix(name, "NOTES.txt")
}

// RedactSecretValues returns err with every scalar of the values layers that
// came from a Secret taken out of its message, as decrypted values are: a
// chart's fail or required may quote any value it was given.
func RedactSecretValues(err error, layers []Values) error {
	var secret []string
	for _, l := range layers {
		if !l.Secret {
			continue
		}
		var v any
		if sigsyaml.Unmarshal(l.YAML, &v) != nil {
			secret = append(secret, string(l.YAML))
			continue
		}
		secret = appendScalars(secret, v)
	}
	if len(secret) == 0 {
		return err
	}
	return redactIn(err, secret)
}

// appendScalars appends every scalar of v, as text.
func appendScalars(out []string, v any) []string {
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			out = appendScalars(out, e)
		}
	case []any:
		for _, e := range v {
			out = appendScalars(out, e)
		}
	case nil:
	case string:
		out = append(out, v)
	default:
		out = append(out, fmt.Sprint(v))
	}
	return out
}

// DefaultAPIVersions are the API versions a chart sees when the caller names
// none: Helm's own set, the group versions Kubernetes builds in.
func DefaultAPIVersions() []string {
	return append([]string{}, common.DefaultVersionSet...)
}

// ReadCapabilities reads the cluster's capabilities for one render of a chart.
func ReadCapabilities(ctx context.Context, helm Helm) (Capabilities, error) {
	if helm.Capabilities == nil {
		return Capabilities{}, nil
	}
	caps, err := helm.Capabilities(ctx)
	if err != nil {
		return Capabilities{}, fmt.Errorf("reading the cluster's capabilities for a Helm chart: %w", err)
	}
	return caps, nil
}

// Chart renders the chart at dir (relative to the root of fs) of the files a
// copier copied, as helm says with h and what the cluster answered (c): the
// one way both the agent and the CLI render a chart.
func Chart(fs *FS, dir string, h Helm, c Capabilities, opts Options) ([]*unstructured.Unstructured, error) {
	caps, err := capabilitiesOf(c)
	if err != nil {
		return nil, &result.RenderError{File: dir, Err: err}
	}
	r, err := renderChart(fs, path.Join("/", dir), h, caps, opts)
	if err != nil {
		return nil, err
	}
	return r.objs, nil
}
