package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"
	"tether.dev/tether/source/result"
)

// ErrRemoteReference is wrapped by every result.RenderError that refuses a reference to
// something outside the repository: rendering reads the commit's files and never
// reaches the network, whatever field of a kustomization names the URL.
var ErrRemoteReference = errors.New("rendering reads only the repository's files, never a URL")

// renderKustomize builds dir in process: no plugins, no exec or container
// functions, no Helm, files only from inside each kustomization's root, and no
// URLs.
//
// kustomize's own file loader downloads any http(s) path it is asked to load,
// whatever the load restrictions, and clones anything shaped like a git URL that
// names a base. It offers no way to replace that loader. The process refuses both
// (see IsolateRendering), and every kustomization and every builtin plugin
// configuration that kustomize could read is checked before kustomize runs, so
// that the error names the file and the field: see checkKustomization and
// checkRootFiles.
func renderKustomize(fs filesys.FileSystem, dir string, rel func(string) string, budget *byteBudget) ([]*unstructured.Unstructured, error) {
	c := refChecker{fs: fs, rel: rel, roots: map[string]bool{}, maxBytes: budget.max}
	if err := c.checkKustomization(dir); err != nil {
		return nil, err
	}
	for r := range c.roots {
		if err := c.checkRootFiles(r); err != nil {
			return nil, err
		}
	}
	return buildKustomize(fs, dir, rel, budget)
}

// buildKustomize runs kustomize on dir, unchecked.
func buildKustomize(fs filesys.FileSystem, dir string, rel func(string) string, budget *byteBudget) (objs []*unstructured.Unstructured, err error) {
	defer func() {
		if r := recover(); r != nil {
			objs, err = nil, &result.RenderError{File: rel(dir), Err: fmt.Errorf("kustomize build panicked: %v", r)}
		}
	}()
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	// Builtin transformers and generators only: no exec, container or starlark
	// functions, no Go plugins, and Helm off.
	opts.PluginConfig = types.DisabledPluginConfig()
	opts.PluginConfig.FnpLoadingOptions = types.FnPluginLoadingOptions{}
	opts.PluginConfig.HelmConfig = types.HelmConfig{Enabled: false}
	resMap, err := krusty.MakeKustomizer(opts).Run(fs, dir)
	if err != nil {
		return nil, &result.RenderError{File: rel(dir), Err: fmt.Errorf("kustomize build: %w", err)}
	}
	for _, r := range resMap.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, &result.RenderError{File: rel(dir), Err: fmt.Errorf("kustomize output %s: %w", r.CurId(), err)}
		}
		obj, err := toObject(m, budget)
		if err != nil {
			return nil, &result.RenderError{File: rel(dir), Err: fmt.Errorf("kustomize output %s: %w", r.CurId(), err)}
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// freeTextFields hold values kustomize never reads as a path (labels, annotations,
// literal values, inline patches), which may well hold URLs. Keys are matched
// exactly, in the field names kustomize's own types give them: a key spelt
// otherwise is checked like any other.
var freeTextFields = map[string]bool{
	"commonLabels": true, "commonAnnotations": true, "labels": true, "annotations": true,
	"literals": true, "patch": true, "metadata": true,
}

// configFactory parses builtin plugin configurations as kustomize does.
var configFactory = resmap.NewFactory(provider.NewDefaultDepProvider().GetResourceFactory())

// refChecker checks, before kustomize runs, what kustomize will read. It reads
// every file the way kustomize does: a kustomization with kustomize's own types
// and decoder (YAML 1.1 merge keys, !!binary, field names matched without regard
// to case, deprecated fields), and a plugin configuration as kustomize's resource
// factory parses it and its plugins decode it.
type refChecker struct {
	fs  filesys.FileSystem
	rel func(string) string
	// roots are the kustomization roots reached: the load restrictor confines
	// kustomize's reads to files below them.
	roots map[string]bool
	// maxBytes bounds what one document may expand to; 0 is documentMap's default.
	maxBytes int64
}

// checkKustomization refuses, in the kustomization of dir and in every one it
// reaches, any value kustomize would fetch over http(s), whichever field holds
// it (generator files and envs, patches, replacements, openapi, configurations,
// crds, …), any root reference that is not a directory or file of the
// repository (kustomize clones anything it can parse as a git URL), and Helm
// charts (kustomize's Helm support is off). Errors name the kustomization file
// and the field.
func (c *refChecker) checkKustomization(dir string) error {
	if c.roots[dir] {
		return nil
	}
	c.roots[dir] = true
	file := findKustomization(c.fs, dir)
	if file == "" {
		return nil // a plain directory used as a resource
	}
	k, err := c.readKustomization(file)
	if err != nil {
		return &result.RenderError{File: c.rel(file), Err: err}
	}
	for _, r := range rootRefs(k) {
		err := c.checkRoot(dir, r)
		if result.IsRenderError(err) {
			return err // about a kustomization or file this one reaches
		}
		if err != nil {
			return &result.RenderError{File: c.rel(file), Err: err}
		}
	}
	if err := checkNoHelm(k); err != nil {
		return &result.RenderError{File: c.rel(file), Err: err}
	}
	fields, err := fieldsOf(k)
	if err != nil {
		return &result.RenderError{File: c.rel(file), Err: err}
	}
	if err := checkNoURLs(fields, ""); err != nil {
		return &result.RenderError{File: c.rel(file), Err: err}
	}
	return nil
}

// readKustomization reads a kustomization file as kustomize reads it, after
// checking within the byte budget what its aliases expand to (kustomize's decoder
// expands them without a bound).
func (c *refChecker) readKustomization(file string) (*types.Kustomization, error) {
	data, err := c.fs.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var node yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&node); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if _, err := documentMap(&node, &byteBudget{max: c.maxBytes}); err != nil {
		return nil, err
	}
	return decodeKustomization(data)
}

// decodeKustomization decodes a kustomization exactly as kustomize does, with its
// own types and decoder. Deprecated fields stay where they were written, so that
// a message names the field the file holds; FixKustomization only moves values
// between fields, all of which are checked.
func decodeKustomization(data []byte) (*types.Kustomization, error) {
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return nil, err
	}
	return &k, nil
}

// fieldsOf returns a kustomization as plain values named as kustomize's types
// name them, whatever the spelling in the file.
func fieldsOf(k *types.Kustomization) (map[string]any, error) {
	data, err := json.Marshal(k)
	if err != nil {
		return nil, err
	}
	var fields map[string]any
	return fields, json.Unmarshal(data, &fields)
}

// rootRef is one entry of a kustomization that kustomize may open as a file, a
// directory holding another kustomization, or a git repository to clone.
type rootRef struct {
	// field is where the entry is written: "resources[2]".
	field string
	ref   string
	// plugin entries (generators, transformers, validators) may also be a plugin
	// configuration written inline.
	plugin bool
}

// rootRefs lists the entries of k that kustomize opens as roots, in the fields
// kustomize reads them from (bases is resources' deprecated name).
func rootRefs(k *types.Kustomization) []rootRef {
	var refs []rootRef
	add := func(field string, entries []string, plugin bool) {
		for i, e := range entries {
			refs = append(refs, rootRef{field: fmt.Sprintf("%s[%d]", field, i), ref: e, plugin: plugin})
		}
	}
	add("resources", k.Resources, false)
	add("bases", k.Bases, false) //nolint:staticcheck // deprecated, and still read by kustomize: checked where written
	add("components", k.Components, false)
	add("generators", k.Generators, true)
	add("transformers", k.Transformers, true)
	add("validators", k.Validators, true)
	return refs
}

// checkRoot checks one root entry: an inline plugin configuration, or a file or
// directory of the repository, whose kustomization is checked in turn.
func (c *refChecker) checkRoot(dir string, r rootRef) error {
	if r.plugin {
		// Kustomize parses the entry, expanding its aliases, to find out.
		if err := c.checkExpansion([]byte(r.ref)); err != nil {
			return fmt.Errorf("%s: %w", r.field, err)
		}
		if isInlineConfig(r.ref) {
			return c.checkConfigs([]byte(r.ref), r.field)
		}
	}
	if remoteShaped(r.ref) {
		return fmt.Errorf("%s: remote resource %q refused: remote bases are disabled: %w", r.field, redact(r.ref), ErrRemoteReference)
	}
	p := filepath.Join(dir, r.ref)
	if !c.fs.Exists(p) {
		return fmt.Errorf("%s: resource %q not found in the repository", r.field, r.ref)
	}
	if c.fs.IsDir(p) {
		return c.checkKustomization(p)
	}
	return nil
}

// isInlineConfig reports whether kustomize takes an entry of generators,
// transformers or validators for plugin configurations written inline rather
// than for a path: whenever it parses as resources.
func isInlineConfig(entry string) bool {
	_, err := configFactory.NewResMapFromBytes([]byte(entry))
	return err == nil
}

// checkNoHelm refuses Helm charts in a kustomization: kustomize's Helm support
// is off, and would fetch charts from their repositories.
func checkNoHelm(k *types.Kustomization) error {
	field := ""
	switch {
	case len(k.HelmCharts) > 0:
		field = "helmCharts[0]"
	case len(k.HelmChartInflationGenerator) > 0:
		field = "helmChartInflationGenerator[0]"
	case k.HelmGlobals != nil:
		field = "helmGlobals"
	default:
		return nil
	}
	return fmt.Errorf("%s: Helm charts in a kustomization are not rendered (kustomize's Helm support is off, and would fetch the chart): %w", field, ErrRemoteReference)
}

// checkRootFiles reads every file below a kustomization root, which kustomize may
// load, and refuses one that expands past the byte budget through YAML aliases
// (kustomize expands aliases without a bound), or a builtin plugin configuration
// that holds a URL (an entry of generators, transformers or validators may name
// any file or directory below a root). Files that do not parse as resources are
// left to kustomize: a generator may read any file.
func (c *refChecker) checkRootFiles(dir string) error {
	return c.fs.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, err := c.fs.ReadFile(p)
		if err != nil {
			return &result.RenderError{File: c.rel(p), Err: err}
		}
		if bytes.Contains(data, []byte("&")) && bytes.Contains(data, []byte("*")) {
			if err := c.checkExpansion(data); err != nil {
				return &result.RenderError{File: c.rel(p), Err: err}
			}
		}
		// Kustomize takes a resource for a builtin plugin configuration by its
		// apiVersion, which YAML spells with the word itself or with escapes.
		if bytes.Contains(data, []byte("builtin")) || bytes.Contains(data, []byte(`\`)) {
			if err := c.checkConfigs(data, ""); err != nil {
				return &result.RenderError{File: c.rel(p), Err: err}
			}
		}
		return nil
	})
}

// checkExpansion decodes each YAML document of data within the byte budget. It
// stops quietly at the first document that is not YAML.
func (c *refChecker) checkExpansion(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var node yaml.Node
		if err := dec.Decode(&node); err != nil {
			return nil // the end, or not YAML
		}
		if _, err := documentMap(&node, &byteBudget{max: c.maxBytes}); errors.Is(err, errYAMLTooLarge) {
			return err
		}
	}
}

// checkConfigs refuses a URL in any builtin plugin configuration among the
// resources data holds, read as kustomize reads them: parsed by its resource
// factory (which takes "/builtin" and an escaped "builtin" for builtin too), then
// decoded as its plugins decode their configuration (YAML 1.1 into JSON, so a
// !!binary value is checked as the text it decodes to). field is where data is
// written, for messages.
func (c *refChecker) checkConfigs(data []byte, field string) error {
	if err := c.checkExpansion(data); err != nil {
		return err
	}
	configs, err := configFactory.NewResMapFromBytes(data)
	if err != nil {
		return nil // not resources: kustomize fails on it, or reads it as data
	}
	for _, r := range configs.Resources() {
		if gvk := r.GetGvk(); gvk.Group != "" || gvk.Version != konfig.BuiltinPluginApiVersion {
			continue // not a builtin plugin, which kustomize refuses
		}
		doc, err := pluginFields(r)
		if err != nil {
			return err
		}
		if err := checkNoURLs(doc, field); err != nil {
			return err
		}
	}
	return nil
}

// pluginFields returns a builtin plugin's configuration as the plugin decodes it.
func pluginFields(r *resource.Resource) (map[string]any, error) {
	y, err := r.AsYAML()
	if err != nil {
		return nil, err
	}
	j, err := sigsyaml.YAMLToJSON(y)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	return doc, json.Unmarshal(j, &doc)
}

// checkNoURLs walks a decoded document and refuses the first value, outside free
// text, that kustomize would fetch. field is the path of v in the document.
func checkNoURLs(v any, field string) error {
	switch v := v.(type) {
	case map[string]any:
		// In key order, so that of several refusals the same one is reported.
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if freeTextFields[k] {
				continue
			}
			if err := checkNoURLs(v[k], joinField(field, k)); err != nil {
				return err
			}
		}
	case []any:
		for i, item := range v {
			if err := checkNoURLs(item, fmt.Sprintf("%s[%d]", field, i)); err != nil {
				return err
			}
		}
	case string:
		if fetched(v) {
			return fmt.Errorf("%s: %q refused: %w", field, redact(v), ErrRemoteReference)
		}
	}
	return nil
}

func joinField(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// fetched reports whether kustomize's loader would download s: an http(s) URL, as
// kustomize parses one, alone or as the path of a generator's "key=path" source.
func fetched(s string) bool {
	_, path, _ := strings.Cut(s, "=")
	return isHTTPURL(s) || isHTTPURL(path)
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https")
}

// remoteShaped reports whether kustomize would treat a root reference as a git
// repository to clone, as kustomize's own parser of git URLs decides (which
// resource.Origin exposes), or as a URL of any kind.
func remoteShaped(ref string) bool {
	lower := strings.ToLower(ref)
	if strings.HasPrefix(lower, "git::") || strings.Contains(lower, "://") || isHTTPURL(ref) {
		return true // before the parser, which logs a warning about "git::"
	}
	return (&resource.Origin{}).Append(ref).Repo != ""
}

// redact keeps credentials written into a URL out of messages.
func redact(s string) string {
	if key, path, ok := strings.Cut(s, "="); ok && isHTTPURL(path) {
		return key + "=" + result.RedactURL(path)
	}
	return result.RedactURL(s)
}

// IsKustomizationFile reports whether a file of this base name is a
// kustomization kustomize reads.
func IsKustomizationFile(base string) bool {
	return slices.Contains(kustomizationFiles, base)
}

// LocalRoots lists the entries of the kustomization data that may name a
// directory or file of the repository (relative, not a URL nor a git
// repository), as kustomize reads them: a root spelt "Resources" is a root.
// Whatever cannot be read is left for the render to report: the copier that
// asks (source) copies what the render needs, and the render checks it.
func LocalRoots(data []byte) []string {
	k, err := decodeKustomization(data)
	if err != nil {
		return nil
	}
	var roots []string
	for _, r := range rootRefs(k) {
		if r.ref == "" || strings.Contains(r.ref, "\n") || remoteShaped(r.ref) || path.IsAbs(r.ref) {
			continue
		}
		roots = append(roots, r.ref)
	}
	return roots
}
