package render

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/text/encoding/unicode"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	sigsyaml "sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/result"
	"tether.dev/tether/source/sops"
)

// DirOptions bound one render of a directory (Dir).
type DirOptions struct {
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
	// Decryption decrypts the SOPS files the render reads; nil reads them as
	// they are.
	Decryption *sops.Decryption
	// Directory selects the files a plain directory renders (Argo CD's
	// directory options); the zero value reads them all, recursively.
	Directory Directory
}

// byteBudget counts rendered bytes against DirOptions.MaxBytes.
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

// ErrNoSuchPath is wrapped by the result.RenderError of a path the revision does not
// hold.
var ErrNoSuchPath = errors.New("no such directory in the repository")

// Dir turns dir of fs into objects. A directory holding a kustomization is built
// with kustomize; any other directory is rendered as renderPlain says: its .yaml,
// .yml and .json files recursively, each of which may hold several documents, and
// each subdirectory holding a kustomization built as one. Errors are *RenderError and name
// the file at fault relative to root. A panic while rendering (in kustomize, in a
// parser) is returned as a *RenderError too: repository content must not be able
// to crash the agent.
func Dir(fs filesys.FileSystem, root, dir string, opts DirOptions) (objs []*unstructured.Unstructured, err error) {
	root, dir = filepath.Clean(root), filepath.Clean(dir)
	rel := func(p string) string {
		r, rerr := filepath.Rel(root, p)
		if rerr != nil {
			return p
		}
		return r
	}
	if opts.Decryption != nil {
		decrypting := newDecryptingFS(fs, opts.Decryption, rel, newNodeBudget(opts).perFile)
		fs = decrypting
		// Registered before the recovery below, so that it runs after it: no
		// message, a panic's included, leaves with a decrypted value in it.
		defer func() { err = decrypting.redact(err) }()
		if opts.Decryption.RequireEncryption {
			defer func() {
				if err == nil {
					err = CheckRenderedSecrets(objs, decrypting.decrypted, rel(dir))
				}
				if err != nil {
					objs = nil
				}
			}()
		}
	}
	defer func() {
		if r := recover(); r != nil {
			objs, err = nil, &result.RenderError{File: rel(dir), Err: fmt.Errorf("rendering panicked: %v", r)}
		}
	}()
	if !fs.IsDir(dir) {
		return nil, &result.RenderError{File: rel(dir), Err: ErrNoSuchPath}
	}
	budget := &byteBudget{max: opts.MaxBytes}
	nodes := newNodeBudget(opts)
	if findKustomization(fs, dir) != "" {
		objs, err = renderKustomization(fs, dir, rel, budget, nodes)
	} else {
		var sel *fileSelector
		if sel, err = opts.Directory.selector(dir); err != nil {
			return nil, &result.RenderError{File: rel(dir), Err: err}
		}
		objs, err = renderPlain(fs, dir, rel, budget, nodes, sel)
	}
	if err != nil {
		return nil, err
	}
	if opts.MaxObjects > 0 && len(objs) > opts.MaxObjects {
		return nil, &result.RenderError{File: rel(dir), Reason: v1alpha1.ReasonRenderLimitExceeded, Err: fmt.Errorf("renders %d objects, over the limit of %d", len(objs), opts.MaxObjects)}
	}
	if err := checkDuplicates(objs); err != nil {
		return nil, &result.RenderError{File: rel(dir), Err: err}
	}
	return objs, nil
}

func findKustomization(fs filesys.FileSystem, dir string) string {
	for _, name := range kustomizationFiles {
		if p := filepath.Join(dir, name); fs.Exists(p) && !fs.IsDir(p) {
			return p
		}
	}
	return ""
}

// renderPlain renders a directory without a kustomization as Flux renders such
// a path: every manifest file below it, recursively, and every subdirectory that
// holds a kustomization built as one (its files are not also read as
// manifests), in lexical order of path so that the result is stable. Documents
// that are no Kubernetes object (a values.yaml, a chart repository's
// index.yaml, a CI workflow) are left out silently, as Flux and Argo CD leave
// them out; they still count against the render's YAML node budgets. Hidden
// files and directories (".github", ".gitlab-ci.yml") are not read.
func renderPlain(fs filesys.FileSystem, dir string, rel func(string) string, budget *byteBudget, nodes *nodeBudget, sel *fileSelector) ([]*unstructured.Unstructured, error) {
	var paths []string
	kustomizations := map[string]bool{}
	err := fs.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		if strings.HasPrefix(info.Name(), ".") {
			if info.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if info.IsDir() {
			switch {
			case !sel.descends():
				return filepath.SkipDir
			case findKustomization(fs, p) != "":
				if sel.reads(p) {
					paths = append(paths, p)
					kustomizations[p] = true
				}
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			if sel.reads(p) {
				paths = append(paths, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, &result.RenderError{File: rel(dir), Err: err}
	}
	sort.Strings(paths)
	var objs []*unstructured.Unstructured
	for _, p := range paths {
		var found []*unstructured.Unstructured
		if kustomizations[p] {
			found, err = renderKustomization(fs, p, rel, budget, nodes)
		} else {
			found, err = renderManifestFile(fs, p, rel, budget, nodes)
		}
		if err != nil {
			return nil, err
		}
		objs = append(objs, found...)
	}
	return objs, nil
}

// renderManifestFile reads the objects of one file of a plain directory.
func renderManifestFile(fs filesys.FileSystem, file string, rel func(string) string, budget *byteBudget, nodes *nodeBudget) ([]*unstructured.Unstructured, error) {
	data, err := fs.ReadFile(file)
	if err != nil {
		return nil, &result.RenderError{File: rel(file), Err: err}
	}
	objs, err := decodeManifests(data, budget, nodes, skipOthers)
	if err != nil {
		return nil, FileError(rel(file), err)
	}
	return objs, nil
}

// renderKustomization builds the kustomization of dir, every file kustomize
// reads counted against the render's node budget.
func renderKustomization(fs filesys.FileSystem, dir string, rel func(string) string, budget *byteBudget, nodes *nodeBudget) ([]*unstructured.Unstructured, error) {
	counted := &nodeCountingFS{FileSystem: fs, nodes: nodes, rel: rel}
	objs, err := renderKustomize(counted, dir, rel, budget)
	if counted.err != nil {
		return nil, counted.err // kustomize may have wrapped it beyond recognition
	}
	return objs, err
}

// DecodeManifests splits a YAML or JSON stream into Kubernetes objects, read as
// kubectl reads a file it applies: documents split at "---" lines, each decoded
// with sigs.k8s.io/yaml (YAML 1.1: unquoted yes/no/on/off are booleans, a merge
// key takes a list of mappings). Empty documents are skipped; a document without
// apiVersion or kind is an error that names its position. A kind List is
// expanded into its items.
func DecodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	return decodeManifests(data, nil, newNodeBudget(DirOptions{}), refuseOthers)
}

// asUTF8 returns data as UTF-8, as kubectl and kustomize read a manifest: a
// file that starts with a UTF-16 byte-order mark (as some Windows editors save
// YAML) is transcoded, in the order the mark says; a UTF-8 byte-order mark is
// dropped. The result is at most one and a half times data.
func asUTF8(data []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}), bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		if len(data)%2 != 0 {
			return nil, errors.New("the file starts with a UTF-16 byte-order mark but has an odd number of bytes: it is cut, or no UTF-16")
		}
		out, err := unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM).NewDecoder().Bytes(data)
		if err != nil {
			return nil, fmt.Errorf("the file starts with a UTF-16 byte-order mark but is no UTF-16 text: %w", err)
		}
		return out, nil
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		return data[3:], nil
	}
	return data, nil
}

// others says what decodeManifests does with a document that is no Kubernetes
// object (no apiVersion or no kind, or not a mapping).
type others int

const (
	// refuseOthers fails on such a document, naming its position.
	refuseOthers others = iota
	// skipOthers leaves it out, as Flux and Argo CD leave out a values.yaml or a
	// CI workflow found among a directory's manifests.
	skipOthers
)

// decodeManifests is DecodeManifests within a render's budgets. The file's nodes
// are bounded from its text before any parser runs; then the stream is parsed
// (yaml.v3, which builds no value and expands no alias) and what each document
// expands to through aliases is counted against the node and byte budgets
// before kubectl's decoder, which expands aliases as it goes, sees any of it.
func decodeManifests(data []byte, budget *byteBudget, nodes *nodeBudget, other others) ([]*unstructured.Unstructured, error) {
	data, err := asUTF8(data)
	if err != nil {
		return nil, err
	}
	if err := measureStream(data, budget, nodes); err != nil {
		return nil, err
	}
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for n := 1; ; n++ {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		found, err := decodeDocument(doc, budget, other)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		objs = append(objs, found...)
	}
}

// measureStream parses every document of data and charges what it expands to.
func measureStream(data []byte, budget *byteBudget, nodes *nodeBudget) error {
	allowed, err := nodes.file(data)
	if err != nil {
		return err
	}
	conv := newConverter(budget, allowed)
	defer func() { nodes.expanded(conv.spent()) }()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for n := 1; ; n++ {
		var node yaml.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("document %d: %w", n, syntaxError(data, err))
		}
		if err := conv.measure(&node, 0); err != nil {
			return fmt.Errorf("document %d: %w", n, err)
		}
	}
}

// decodeDocument decodes one document as kubectl does: nothing for an empty one,
// the items of a List, or the object.
func decodeDocument(doc []byte, budget *byteBudget, other others) ([]*unstructured.Unstructured, error) {
	data, err := sigsyaml.YAMLToJSON(doc)
	if err != nil {
		return nil, kubectlYAMLError(err)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return nil, nil
	}
	var fields map[string]any
	if data[0] != '{' || utiljson.Unmarshal(data, &fields) != nil {
		if other == skipOthers {
			return nil, nil
		}
		return nil, errors.New("not a Kubernetes object: the document is not a mapping")
	}
	if other == skipOthers && !isObject(fields) {
		return nil, nil
	}
	if err := budget.spend(len(data)); err != nil {
		return nil, err
	}
	obj, err := newObject(fields)
	if err != nil {
		return nil, err
	}
	if obj.IsList() {
		return expandList(obj)
	}
	return []*unstructured.Unstructured{obj}, nil
}

// kubectlYAMLError classes the refusal of a document whose aliases expand far
// beyond its size (which kubectl's decoder refuses too) as a render over its
// bounds.
func kubectlYAMLError(err error) error {
	if strings.Contains(err.Error(), "excessive aliasing") {
		return overBudgetf("%v: its aliases expand too far for kubectl's YAML decoder, which refuses it too", err)
	}
	return err
}

// isObject reports whether a document names its apiVersion and kind.
func isObject(fields map[string]any) bool {
	apiVersion, _ := fields["apiVersion"].(string)
	kind, _ := fields["kind"].(string)
	return apiVersion != "" && kind != ""
}

func toObject(doc map[string]any, budget *byteBudget) (*unstructured.Unstructured, error) {
	if !isObject(doc) {
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
	var fields map[string]any
	if err := utiljson.Unmarshal(data, &fields); err != nil {
		return nil, err
	}
	return newObject(fields)
}

// newObject makes an object of fields decoded from JSON (apimachinery's value
// types), refusing one without apiVersion, kind or name.
func newObject(fields map[string]any) (*unstructured.Unstructured, error) {
	if !isObject(fields) {
		return nil, errors.New("not a Kubernetes object: apiVersion and kind are required")
	}
	obj := &unstructured.Unstructured{Object: fields}
	if !obj.IsList() {
		if err := checkName(obj); err != nil {
			return nil, err
		}
	}
	return obj, nil
}

// checkName refuses an object without a name. One with only generateName would
// be created anew by every apply (server-side apply needs a name), an endless
// retry instead of a clear error; a hook may have one (plan names it for its run).
func checkName(obj *unstructured.Unstructured) error {
	switch {
	case obj.GetName() != "":
		return nil
	case obj.GetGenerateName() != "" && v1alpha1.IsHookAnnotated(obj.GetAnnotations()):
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
		name := o.GetName()
		if name == "" {
			// A hook with only generateName: two with the same prefix would be
			// given the same name for a run.
			name = "generateName:" + o.GetGenerateName()
		}
		key := gvk.Group + "/" + gvk.Kind + "/" + o.GetNamespace() + "/" + name
		if seen[key] {
			return fmt.Errorf("%s %s is declared twice", gvk.Kind, objectName(o))
		}
		seen[key] = true
	}
	return nil
}

func objectName(o *unstructured.Unstructured) string {
	name := o.GetName()
	if name == "" {
		name = o.GetGenerateName() + "*"
	}
	if o.GetNamespace() == "" {
		return name
	}
	return o.GetNamespace() + "/" + name
}
