package source

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"tether.dev/tether/api/v1alpha1"
)

// RenderOptions bound one render.
type RenderOptions struct {
	// MaxObjects is the most objects the directory may render to; 0 means no limit.
	MaxObjects int
	// MaxBytes is the most bytes, as JSON, the rendered objects may take together;
	// 0 means no limit. It bounds what YAML aliases or kustomize make of a small
	// input, which the input's size limits do not.
	MaxBytes int64
	// MaxYAMLNodesPerFile is the most YAML nodes one file may hold, bounded from
	// its text before it is parsed, and expand to through aliases; 0 means
	// DefaultMaxYAMLNodesPerFile.
	MaxYAMLNodesPerFile int
	// MaxYAMLNodesPerRender is the most YAML nodes the files the render reads may
	// hold together, counted as for MaxYAMLNodesPerFile (a file kustomize reads
	// twice counts twice); 0 means DefaultMaxYAMLNodesPerRender.
	MaxYAMLNodesPerRender int
}

// byteBudget counts rendered bytes against RenderOptions.MaxBytes.
type byteBudget struct {
	used, max int64
}

// spend charges n bytes, failing once the budget is exceeded. A nil budget is
// unlimited.
func (b *byteBudget) spend(n int) error {
	if b == nil {
		return nil
	}
	b.used += int64(n)
	if b.max > 0 && b.used > b.max {
		return overBudgetf("renders more than the limit of %d bytes", b.max)
	}
	return nil
}

// remaining is how many bytes a limited budget has left.
func (b *byteBudget) remaining() int64 {
	return max(b.max-b.used, 1)
}

// kustomizationFiles are the names kustomize recognises, in its order of preference.
var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// Render turns dir of fs into objects. A directory holding a kustomization is built
// with kustomize; any other directory is read recursively for .yaml, .yml and .json
// files, each of which may hold several documents. Errors are *RenderError and name
// the file at fault relative to root. A panic while rendering (in kustomize, in a
// parser) is returned as a *RenderError too: repository content must not be able
// to crash the agent.
func Render(fs filesys.FileSystem, root, dir string, opts RenderOptions) ([]*unstructured.Unstructured, error) {
	objs, _, err := renderSized(fs, root, dir, opts)
	return objs, err
}

// renderSized is Render that also returns the size of the objects as JSON.
func renderSized(fs filesys.FileSystem, root, dir string, opts RenderOptions) (objs []*unstructured.Unstructured, size int64, err error) {
	root, dir = filepath.Clean(root), filepath.Clean(dir)
	rel := func(p string) string {
		r, rerr := filepath.Rel(root, p)
		if rerr != nil {
			return p
		}
		return r
	}
	defer func() {
		if r := recover(); r != nil {
			objs, size, err = nil, 0, &RenderError{File: rel(dir), Err: fmt.Errorf("rendering panicked: %v", r)}
		}
	}()
	if !fs.IsDir(dir) {
		return nil, 0, &RenderError{File: rel(dir), Err: ErrNoSuchPath}
	}
	budget := &byteBudget{max: opts.MaxBytes}
	nodes := newNodeBudget(opts)
	if k := findKustomization(fs, dir); k != "" {
		counted := &nodeCountingFS{FileSystem: fs, nodes: nodes, rel: rel}
		objs, err = renderKustomize(counted, dir, rel, budget)
		if counted.err != nil {
			err = counted.err // kustomize may have wrapped it beyond recognition
		}
	} else {
		objs, err = renderPlain(fs, dir, rel, budget, nodes)
	}
	if err != nil {
		return nil, 0, err
	}
	if opts.MaxObjects > 0 && len(objs) > opts.MaxObjects {
		return nil, 0, &RenderError{File: rel(dir), Reason: v1alpha1.ReasonRenderLimitExceeded, Err: fmt.Errorf("renders %d objects, over the limit of %d", len(objs), opts.MaxObjects)}
	}
	if err := checkDuplicates(objs); err != nil {
		return nil, 0, &RenderError{File: rel(dir), Err: err}
	}
	return objs, budget.used, nil
}

func findKustomization(fs filesys.FileSystem, dir string) string {
	for _, name := range kustomizationFiles {
		if p := filepath.Join(dir, name); fs.Exists(p) && !fs.IsDir(p) {
			return p
		}
	}
	return ""
}

// renderPlain reads every manifest file under dir, in lexical order so that the
// result is stable. Hidden files and directories (".github") are skipped.
func renderPlain(fs filesys.FileSystem, dir string, rel func(string) string, budget *byteBudget, nodes *nodeBudget) ([]*unstructured.Unstructured, error) {
	var files []string
	err := fs.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(info.Name(), ".") {
			if info.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			if !info.IsDir() {
				files = append(files, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, &RenderError{File: rel(dir), Err: err}
	}
	sort.Strings(files)
	var objs []*unstructured.Unstructured
	for _, f := range files {
		data, err := fs.ReadFile(f)
		if err != nil {
			return nil, &RenderError{File: rel(f), Err: err}
		}
		docs, err := decodeManifests(data, budget, nodes)
		if err != nil {
			return nil, renderError(rel(f), err)
		}
		objs = append(objs, docs...)
	}
	return objs, nil
}

// DecodeManifests splits a YAML or JSON stream into Kubernetes objects. Empty
// documents are skipped; a document without apiVersion or kind is an error that
// names its position. A kind List is expanded into its items.
func DecodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	return decodeManifests(data, nil, newNodeBudget(RenderOptions{}))
}

// decodeManifests is DecodeManifests within a render's budgets: the file's nodes
// are bounded from its text before it is parsed, and its values after alias
// expansion as they are converted.
func decodeManifests(data []byte, budget *byteBudget, nodes *nodeBudget) ([]*unstructured.Unstructured, error) {
	allowed, err := nodes.file(data)
	if err != nil {
		return nil, err
	}
	conv := newConverter(budget, allowed)
	defer func() { nodes.expanded(conv.spent()) }()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var objs []*unstructured.Unstructured
	for n := 1; ; n++ {
		var node yaml.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, syntaxError(data, err))
		}
		doc, err := conv.document(&node)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if len(doc) == 0 {
			continue
		}
		obj, err := toObject(doc, budget)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if obj.IsList() {
			items, err := expandList(obj)
			if err != nil {
				return nil, fmt.Errorf("document %d: %w", n, err)
			}
			objs = append(objs, items...)
			continue
		}
		objs = append(objs, obj)
	}
}

func toObject(doc map[string]any, budget *byteBudget) (*unstructured.Unstructured, error) {
	apiVersion, _ := doc["apiVersion"].(string)
	kind, _ := doc["kind"].(string)
	if apiVersion == "" || kind == "" {
		return nil, errors.New("not a Kubernetes object: apiVersion and kind are required")
	}
	// A JSON round trip gives the value types apimachinery expects (int64, float64).
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	if err := budget.spend(len(data)); err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	if !obj.IsList() {
		if err := checkName(obj); err != nil {
			return nil, err
		}
	}
	return obj, nil
}

// checkName refuses an object without a name. One with only generateName would
// be created anew by every apply (server-side apply needs a name), an endless
// retry instead of a clear error.
func checkName(obj *unstructured.Unstructured) error {
	switch {
	case obj.GetName() != "":
		return nil
	case obj.GetGenerateName() != "":
		return fmt.Errorf("%s has only metadata.generateName %q: Tether applies objects by name, so give it a metadata.name", obj.GetKind(), obj.GetGenerateName())
	}
	return fmt.Errorf("%s has no metadata.name", obj.GetKind())
}

func expandList(list *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	l, err := list.ToList()
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(l.Items))
	for i := range l.Items {
		if l.Items[i].GetAPIVersion() == "" || l.Items[i].GetKind() == "" {
			return nil, fmt.Errorf("list item %d: not a Kubernetes object: apiVersion and kind are required", i+1)
		}
		if err := checkName(&l.Items[i]); err != nil {
			return nil, fmt.Errorf("list item %d: %w", i+1, err)
		}
		out = append(out, &l.Items[i])
	}
	return out, nil
}

// checkDuplicates refuses two objects with the same group, kind, namespace and name:
// applying both would make the last one silently win.
func checkDuplicates(objs []*unstructured.Unstructured) error {
	seen := make(map[string]bool, len(objs))
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		key := gvk.Group + "/" + gvk.Kind + "/" + o.GetNamespace() + "/" + o.GetName()
		if seen[key] {
			return fmt.Errorf("%s %s is declared twice", gvk.Kind, objectName(o))
		}
		seen[key] = true
	}
	return nil
}

func objectName(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
