package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// ErrRemoteReference is wrapped by every RenderError that refuses a reference to
// something outside the repository: rendering reads the commit's files and never
// reaches the network, whatever field of a kustomization names the URL.
var ErrRemoteReference = errors.New("rendering reads only the repository's files, never a URL")

// renderKustomize builds dir in process: no plugins, no exec or container
// functions, no Helm, files only from inside each kustomization's root, and no
// URLs.
//
// kustomize's own file loader downloads any http(s) path it is asked to load,
// whatever the load restrictions, and clones anything shaped like a git URL that
// names a base. It offers no way to replace that loader, so every kustomization
// and every builtin plugin configuration that kustomize could read is checked
// before kustomize runs: see checkKustomization and checkRootFiles.
func renderKustomize(fs filesys.FileSystem, dir string, rel func(string) string, budget *byteBudget) (objs []*unstructured.Unstructured, err error) {
	c := refChecker{fs: fs, rel: rel, roots: map[string]bool{}, maxBytes: budget.max}
	if err := c.checkKustomization(dir); err != nil {
		return nil, err
	}
	for r := range c.roots {
		if err := c.checkRootFiles(r); err != nil {
			return nil, err
		}
	}
	defer func() {
		if r := recover(); r != nil {
			objs, err = nil, &RenderError{File: rel(dir), Err: fmt.Errorf("kustomize build panicked: %v", r)}
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
		return nil, &RenderError{File: rel(dir), Err: fmt.Errorf("kustomize build: %w", err)}
	}
	for _, r := range resMap.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, &RenderError{File: rel(dir), Err: fmt.Errorf("kustomize output %s: %w", r.CurId(), err)}
		}
		obj, err := toObject(m, budget)
		if err != nil {
			return nil, &RenderError{File: rel(dir), Err: fmt.Errorf("kustomize output %s: %w", r.CurId(), err)}
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// rootFields are the fields of a kustomization whose entries kustomize may open as
// another kustomization root (a directory, or a git repository it would clone).
var rootFields = []string{"resources", "bases", "components", "generators", "transformers", "validators"}

// freeTextFields hold values kustomize never reads as a path (labels, annotations,
// literal values, inline patches), which may well hold URLs. Helm charts name
// chart repositories, and kustomize refuses them anyway: Helm is off.
var freeTextFields = map[string]bool{
	"commonLabels": true, "commonAnnotations": true, "labels": true, "annotations": true,
	"literals": true, "patch": true, "metadata": true, "helmCharts": true, "helmGlobals": true,
}

// refChecker checks, before kustomize runs, what kustomize will read.
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
// crds, …), and any root reference that is not a directory or file of the
// repository (kustomize clones anything else as a remote base). Errors name the
// kustomization file and the field.
func (c *refChecker) checkKustomization(dir string) error {
	if c.roots[dir] {
		return nil
	}
	c.roots[dir] = true
	file := findKustomization(c.fs, dir)
	if file == "" {
		return nil // a plain directory used as a resource
	}
	k, err := c.readDocument(file)
	if err != nil {
		return &RenderError{File: c.rel(file), Err: err}
	}
	for _, field := range rootFields {
		entries, _ := k[field].([]any)
		for i, entry := range entries {
			ref, _ := entry.(string)
			err := c.checkRoot(dir, fmt.Sprintf("%s[%d]", field, i), ref)
			if IsRenderError(err) {
				return err // about a kustomization or file this one reaches
			}
			if err != nil {
				return &RenderError{File: c.rel(file), Err: err}
			}
		}
	}
	if err := checkNoURLs(k, ""); err != nil {
		return &RenderError{File: c.rel(file), Err: err}
	}
	return nil
}

// checkRoot checks one entry of a root field: an inline plugin configuration, or a
// file or directory of the repository, whose kustomization is checked in turn.
func (c *refChecker) checkRoot(dir, field, ref string) error {
	if strings.Contains(ref, "\n") {
		// An inline generator or transformer configuration.
		return c.checkDocuments([]byte(ref), field, func(map[string]any) bool { return true })
	}
	if remoteShaped(ref) {
		return fmt.Errorf("%s: remote resource %q refused: remote bases are disabled: %w", field, redact(ref), ErrRemoteReference)
	}
	p := filepath.Join(dir, ref)
	if !c.fs.Exists(p) {
		return fmt.Errorf("%s: resource %q not found in the repository", field, ref)
	}
	if c.fs.IsDir(p) {
		return c.checkKustomization(p)
	}
	return nil
}

// readDocument reads the first YAML document of file within the byte budget.
func (c *refChecker) readDocument(file string) (map[string]any, error) {
	data, err := c.fs.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var node yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&node); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return documentMap(&node, &byteBudget{max: c.maxBytes})
}

// checkRootFiles reads every file below a kustomization root, which kustomize may
// load, and refuses one that expands past the byte budget through YAML aliases
// (kustomize expands aliases without a bound), or a builtin plugin configuration
// (apiVersion: builtin, which a generators or transformers entry may name) that
// holds a URL. Files that do not parse as YAML are left to kustomize: a generator
// may read any file.
func (c *refChecker) checkRootFiles(dir string) error {
	return c.fs.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, err := c.fs.ReadFile(p)
		if err != nil {
			return &RenderError{File: c.rel(p), Err: err}
		}
		aliases := bytes.Contains(data, []byte("&")) && bytes.Contains(data, []byte("*"))
		if !aliases && !bytes.Contains(data, []byte("builtin")) {
			return nil // nothing can expand, and no plugin configuration
		}
		if err := c.checkDocuments(data, "", isBuiltinConfig); err != nil {
			return &RenderError{File: c.rel(p), Err: err}
		}
		return nil
	})
}

// checkDocuments decodes each YAML document of data within the byte budget and
// checks those that want it for URLs. It stops quietly at the first document that
// is not YAML.
func (c *refChecker) checkDocuments(data []byte, field string, want func(map[string]any) bool) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var node yaml.Node
		if err := dec.Decode(&node); err != nil {
			return nil // the end, or not YAML
		}
		doc, err := documentMap(&node, &byteBudget{max: c.maxBytes})
		if errors.Is(err, errYAMLTooLarge) {
			return err
		}
		if err != nil || !want(doc) {
			continue
		}
		if err := checkNoURLs(doc, field); err != nil {
			return err
		}
	}
}

func isBuiltinConfig(doc map[string]any) bool {
	v, _ := doc["apiVersion"].(string)
	return v == "builtin"
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
// repository to clone: a URL of any scheme, go-getter's "git::" prefix, a query
// ("?ref="), scp-like "user@host:path", or a github.com path.
func remoteShaped(ref string) bool {
	lower := strings.ToLower(strings.TrimSpace(ref))
	first, _, _ := strings.Cut(lower, "/")
	return strings.Contains(lower, "://") || strings.HasPrefix(lower, "git::") || strings.Contains(lower, "?") ||
		strings.Contains(first, "@") || first == "github.com" || isHTTPURL(lower)
}

// redact keeps credentials written into a URL out of messages.
func redact(s string) string {
	if key, path, ok := strings.Cut(s, "="); ok && isHTTPURL(path) {
		return key + "=" + RedactURL(path)
	}
	return RedactURL(s)
}
