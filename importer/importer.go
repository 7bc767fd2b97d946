package importer

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
)

// Loss is one thing of a peer's object that the Syncs do not carry.
type Loss struct {
	// Object is Kind/namespace/name of the peer's object.
	Object string
	// Field is the field's path ("spec.timeout"), empty for the whole object.
	Field string
	// Why says why, and what to do instead where there is something.
	Why string
}

func (l Loss) String() string {
	if l.Field == "" {
		return l.Object + ": " + l.Why
	}
	return l.Object + ": " + l.Field + ": " + l.Why
}

// Result is what a conversion produced.
type Result struct {
	// Syncs, in the order of the objects they came from.
	Syncs []*v1alpha1.Sync
	// Lost lists what the Syncs do not carry, in the order met.
	Lost []Loss
}

// Kinds of the peers' objects, by API group and kind.
const (
	fluxSource    = "source.toolkit.fluxcd.io"
	fluxKustomize = "kustomize.toolkit.fluxcd.io"
	fluxHelm      = "helm.toolkit.fluxcd.io"
	argo          = "argoproj.io"
)

// Convert converts objs: Flux's GitRepository, OCIRepository, HelmRepository,
// Kustomization and HelmRelease, and Argo CD's Application and AppProject.
// Sources are folded into the Syncs that refer to them; one that nothing
// refers to is reported, as is any other object.
func Convert(objs []*unstructured.Unstructured) Result {
	c := &converter{sources: map[string]*unstructured.Unstructured{}, used: map[string]bool{}}
	for _, o := range objs {
		if o.GroupVersionKind().Group == fluxSource {
			c.sources[sourceKey(o.GetKind(), o.GetNamespace(), o.GetName())] = o
		}
	}
	for _, o := range objs {
		gk := o.GroupVersionKind().GroupKind()
		switch {
		case gk.Group == fluxSource:
			// Folded into the Syncs that refer to it.
		case gk.Group == fluxKustomize && gk.Kind == "Kustomization":
			c.add(c.kustomization(o))
		case gk.Group == fluxHelm && gk.Kind == "HelmRelease":
			c.add(c.helmRelease(o))
		case gk.Group == argo && gk.Kind == "Application":
			c.add(c.application(o))
		case gk.Group == argo && gk.Kind == "AppProject":
			c.lose(o, "", "Tether has no projects: a Sync's namespace and spec.serviceAccountName bound what it may do (docs/multi-tenancy.md)")
		default:
			c.lose(o, "", "not an object of Flux or Argo CD that tether import converts")
		}
	}
	c.unusedSources(objs)
	return Result{Syncs: c.syncs, Lost: c.lost}
}

// converter holds one conversion's state.
type converter struct {
	sources map[string]*unstructured.Unstructured
	used    map[string]bool
	syncs   []*v1alpha1.Sync
	lost    []Loss
}

func (c *converter) add(s *v1alpha1.Sync) {
	if s != nil {
		c.syncs = append(c.syncs, s)
	}
}

func (c *converter) lose(o *unstructured.Unstructured, field, why string) {
	c.lost = append(c.lost, Loss{Object: objectName(o), Field: field, Why: why})
}

// unusedSources reports the sources no converted object referred to.
func (c *converter) unusedSources(objs []*unstructured.Unstructured) {
	for _, o := range objs {
		if o.GroupVersionKind().Group == fluxSource && !c.used[sourceKey(o.GetKind(), o.GetNamespace(), o.GetName())] {
			c.lose(o, "", "no Kustomization or HelmRelease among the input refers to it; a Sync holds its source itself")
		}
	}
}

// source returns the source kind/namespace/name, marking it used.
func (c *converter) source(kind, namespace, name string) (*unstructured.Unstructured, bool) {
	key := sourceKey(kind, namespace, name)
	s, ok := c.sources[key]
	if ok {
		c.used[key] = true
	}
	return s, ok
}

func sourceKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

func objectName(o *unstructured.Unstructured) string {
	if ns := o.GetNamespace(); ns != "" {
		return o.GetKind() + "/" + ns + "/" + o.GetName()
	}
	return o.GetKind() + "/" + o.GetName()
}

// newSync is a Sync named as o, in o's namespace.
func newSync(o *unstructured.Unstructured) *v1alpha1.Sync {
	return &v1alpha1.Sync{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Sync"},
		ObjectMeta: metav1.ObjectMeta{Name: o.GetName(), Namespace: o.GetNamespace()},
	}
}

// fields walks the map at path of o: each key's handler is called with its
// value; a key with no handler is a loss, with why.
func (c *converter) fields(o *unstructured.Unstructured, path string, m map[string]any, handlers map[string]func(v any), why string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if h, ok := handlers[k]; ok {
			if h != nil {
				h(m[k])
			}
			continue
		}
		c.lose(o, path+"."+k, why)
	}
}

// noCounterpart is why a field without a Tether counterpart is lost.
const noCounterpart = "Tether has no counterpart"

// Small readers of unstructured values.

func str(v any) string {
	s, _ := v.(string)
	return s
}

func boolean(v any) bool {
	b, _ := v.(bool)
	return b
}

func object(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func stringList(v any) []string {
	var out []string
	for _, e := range list(v) {
		out = append(out, str(e))
	}
	return out
}

func spec(o *unstructured.Unstructured) map[string]any {
	return object(o.Object["spec"])
}
