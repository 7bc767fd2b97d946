package apply

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	gosync "sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"tether.dev/tether/api/v1alpha1"
)

// IgnoredField is a field of one object that Tether neither compared nor applied,
// because an ignore rule or an autoscaler leaves it to another owner.
type IgnoredField struct {
	// Path is the field as a dotted path: "spec.replicas",
	// `spec.template.spec.containers[name="app"].image`.
	Path string
	// Manager names the other field managers that own the field in the live object
	// and are left to set it. Empty when no one else owns it: Tether then keeps the
	// live value in its apply (adopts it), so that releasing the field does not make
	// the API server delete it.
	Manager string
}

// String writes "spec.replicas left to kube-controller-manager", the form status uses.
func (f IgnoredField) String() string {
	if f.Manager == "" {
		return f.Path + " kept at its live value"
	}
	return f.Path + " left to " + f.Manager
}

// replicasPath is spec.replicas, which autoscalers own.
var replicasPath = fieldpath.MakePathOrDie("spec", "replicas")

// ignoreSalt is what, besides the object itself, changes what is sent for obj:
// the rules that select it. It goes into the verified-match hash.
func ignoreSalt(obj *unstructured.Unstructured, opts Options) string {
	var rules []v1alpha1.IgnoreRule
	for _, r := range opts.Ignore {
		if ruleMatches(r, obj) {
			rules = append(rules, r)
		}
	}
	data, _ := json.Marshal(struct {
		Rules  []v1alpha1.IgnoreRule
		Scaled bool
		Fields []string
	}{rules, opts.IgnoreScaledReplicas, opts.IgnoreFields[RefOf(obj)]})
	return string(data)
}

// ruleMatches reports whether r selects obj. An empty group means the core group,
// except with kind "*", where it means every group (as in {kind: "*", managers: [...]}).
func ruleMatches(r v1alpha1.IgnoreRule, obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	groupOK := r.Group == gvk.Group || r.Group == "*" || (r.Kind == "*" && r.Group == "")
	kindOK := r.Kind == "*" || r.Kind == gvk.Kind
	return groupOK && kindOK &&
		(r.Name == "" || r.Name == obj.GetName()) &&
		(r.Namespace == "" || r.Namespace == obj.GetNamespace())
}

// owners is the parsed managedFields of a live object: the set of fields each
// manager owns, across operations and subresources.
type owners map[string]*fieldpath.Set

// ownersOf parses live's managedFields. An entry that does not parse is skipped:
// a field it would name is then treated as owned by no one, and adopted.
func ownersOf(live *unstructured.Unstructured) owners {
	out := owners{}
	for _, e := range live.GetManagedFields() {
		if e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			continue
		}
		if prev, ok := out[e.Manager]; ok {
			set = prev.Union(set)
		}
		out[e.Manager] = set
	}
	return out
}

// others returns the managers other than self that own p, sorted.
func (o owners) others(p fieldpath.Path, self string) []string {
	var names []string
	for name, set := range o {
		if name != self && set.Has(p) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// ignoredPaths lists the fields of obj that are neither diffed nor applied, given
// the live object: the JSON pointers of matching rules, every field the managers of
// matching rules own, spec.replicas when an autoscaler drives it, and the fields
// given for this object in opts.IgnoreFields.
func ignoredPaths(obj, live *unstructured.Unstructured, own owners, scaled bool, opts Options) []fieldpath.Path {
	var paths []fieldpath.Path
	pointers := append([]string(nil), opts.IgnoreFields[RefOf(obj)]...)
	for _, r := range opts.Ignore {
		if !ruleMatches(r, obj) {
			continue
		}
		pointers = append(pointers, r.JSONPointers...)
		for _, m := range r.Managers {
			if set, ok := own[m]; ok && m != opts.FieldManager {
				paths = append(paths, ownedLeaves(set, nil)...)
			}
		}
	}
	for _, ptr := range pointers {
		if p, ok := pointerPath(ptr, live.Object, obj.Object); ok {
			paths = append(paths, p)
		}
	}
	if scaled {
		paths = append(paths, replicasPath)
	}
	return paths
}

// ownedLeaves lists the fields of set worth removing: its leaves, and list
// elements as a whole. A map a manager merely contributes keys to (metadata.labels)
// is never removed whole.
func ownedLeaves(set *fieldpath.Set, prefix fieldpath.Path) []fieldpath.Path {
	var out []fieldpath.Path
	set.Members.Iterate(func(pe fieldpath.PathElement) {
		if _, hasChildren := set.Children.Get(pe); pe.FieldName == nil || !hasChildren {
			out = append(out, append(prefix.Copy(), pe))
		}
	})
	set.Children.Iterate(func(pe fieldpath.PathElement) {
		if pe.FieldName == nil && set.Members.Has(pe) {
			return // the whole element is already listed
		}
		child, _ := set.Children.Get(pe)
		out = append(out, ownedLeaves(child, append(prefix.Copy(), pe))...)
	})
	return out
}

// pointerPath turns an RFC 6901 pointer into a field path, resolving list indexes
// against the first of objs that has the list: an element with a name becomes
// [name="..."] (how managedFields names it), others keep their index.
func pointerPath(ptr string, objs ...map[string]any) (fieldpath.Path, bool) {
	if ptr == "" || !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	tokens := strings.Split(ptr[1:], "/")
	var path fieldpath.Path
	cur := make([]any, len(objs))
	for i, o := range objs {
		cur[i] = o
	}
	for _, raw := range tokens {
		tok := strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
		pe, ok := elementFor(tok, cur)
		if !ok {
			return nil, false
		}
		path = append(path, pe)
		for i := range cur {
			cur[i], _ = lookupElement(cur[i], pe)
		}
	}
	return path, len(path) > 0
}

// elementFor names token as a path element given the containers it may index.
func elementFor(tok string, containers []any) (fieldpath.PathElement, bool) {
	for _, c := range containers {
		list, ok := c.([]any)
		if !ok {
			continue
		}
		idx, err := strconv.Atoi(tok)
		if err != nil || idx < 0 || idx >= len(list) {
			return fieldpath.PathElement{}, false
		}
		if m, ok := list[idx].(map[string]any); ok {
			if name, ok := m["name"].(string); ok {
				return fieldpath.KeyElementByFields("name", name), true
			}
		}
		return fieldpath.IndexElement(idx), true
	}
	return fieldpath.FieldNameElement(tok), true
}

// lookupElement returns the child of container that pe selects.
func lookupElement(container any, pe fieldpath.PathElement) (any, bool) {
	switch c := container.(type) {
	case map[string]any:
		if pe.FieldName == nil {
			return nil, false
		}
		v, ok := c[*pe.FieldName]
		return v, ok
	case []any:
		if i := indexOf(c, pe); i >= 0 {
			return c[i], true
		}
	}
	return nil, false
}

// indexOf finds the element of list that pe selects, or -1.
func indexOf(list []any, pe fieldpath.PathElement) int {
	switch {
	case pe.Index != nil:
		if *pe.Index < len(list) {
			return *pe.Index
		}
	case pe.Key != nil:
		for i, el := range list {
			m, ok := el.(map[string]any)
			if ok && keyMatches(m, *pe.Key) {
				return i
			}
		}
	case pe.Value != nil:
		for i, el := range list {
			if value.Equals(value.NewValueInterface(el), *pe.Value) {
				return i
			}
		}
	}
	return -1
}

func keyMatches(m map[string]any, key value.FieldList) bool {
	for _, f := range key {
		v, ok := m[f.Name]
		if !ok || !value.Equals(value.NewValueInterface(v), f.Value) {
			return false
		}
	}
	return true
}

// lookupPath returns the value at p in obj.
func lookupPath(obj map[string]any, p fieldpath.Path) (any, bool) {
	var cur any = obj
	for _, pe := range p {
		next, ok := lookupElement(cur, pe)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// removePath deletes the field at p from obj, if it is there.
func removePath(obj map[string]any, p fieldpath.Path) {
	if len(p) == 0 {
		return
	}
	parent, ok := lookupPath(obj, p[:len(p)-1])
	if !ok {
		return
	}
	last := p[len(p)-1]
	switch c := parent.(type) {
	case map[string]any:
		if last.FieldName != nil {
			delete(c, *last.FieldName)
		}
	case []any:
		if i := indexOf(c, last); i >= 0 {
			setPath(obj, p[:len(p)-1], append(c[:i:i], c[i+1:]...))
		}
	}
}

// setPath sets the field at p in obj to v, when its parent exists; it reports
// whether it did.
func setPath(obj map[string]any, p fieldpath.Path, v any) bool {
	if len(p) == 0 {
		return false
	}
	parent, ok := lookupPath(obj, p[:len(p)-1])
	if !ok {
		return false
	}
	last := p[len(p)-1]
	switch c := parent.(type) {
	case map[string]any:
		if last.FieldName != nil {
			c[*last.FieldName] = v
			return true
		}
	case []any:
		if i := indexOf(c, last); i >= 0 {
			c[i] = v
			return true
		}
	}
	return false
}

// withoutIgnored returns obj as it is sent: each ignored field that another manager
// owns is removed (so Tether never reverts it and its ownership goes); each that no
// one else owns keeps its live value (so releasing it does not delete it).
func withoutIgnored(obj, live *unstructured.Unstructured, paths []fieldpath.Path, own owners, self string) (*unstructured.Unstructured, []IgnoredField) {
	out := obj.DeepCopy()
	seen := map[string]bool{}
	var fields []IgnoredField
	for _, p := range paths {
		name := strings.TrimPrefix(p.String(), ".")
		if seen[name] {
			continue
		}
		seen[name] = true
		if _, declared := lookupPath(out.Object, p); !declared {
			continue // not Tether's to send
		}
		others := own.others(p, self)
		if v, ok := lookupPath(live.Object, p); ok && len(others) == 0 && setPath(out.Object, p, runtime.DeepCopyJSONValue(v)) {
			fields = append(fields, IgnoredField{Path: name})
			continue
		}
		removePath(out.Object, p)
		fields = append(fields, IgnoredField{Path: name, Manager: strings.Join(others, ", ")})
	}
	sort.Slice(fields, func(i, j int) bool { return fields[i].Path < fields[j].Path })
	return out, fields
}

// stripped returns a copy of obj without the fields at paths, for Compare.
func stripped(obj *unstructured.Unstructured, paths []fieldpath.Path) *unstructured.Unstructured {
	out := obj.DeepCopy()
	for _, p := range paths {
		removePath(out.Object, p)
	}
	return out
}

// scaleTargets knows, per namespace, which objects a HorizontalPodAutoscaler
// targets: the ones in the cluster (listed once per ApplyAll, and only when an
// object declaring spec.replicas needs it) and the ones being applied.
type scaleTargets struct {
	c       client.Client
	mu      gosync.Mutex
	byNS    map[string]map[string]bool // namespace → "Kind/name"
	desired map[string]bool            // "namespace/Kind/name"
}

func newScaleTargets(c client.Client, objs []*unstructured.Unstructured, defaultNamespace string) *scaleTargets {
	t := &scaleTargets{c: c, byNS: map[string]map[string]bool{}, desired: map[string]bool{}}
	for _, o := range objs {
		if o.GroupVersionKind().Group != "autoscaling" || o.GetKind() != "HorizontalPodAutoscaler" {
			continue
		}
		ns := o.GetNamespace()
		if ns == "" {
			ns = defaultNamespace
		}
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "scaleTargetRef", "kind")
		name, _, _ := unstructured.NestedString(o.Object, "spec", "scaleTargetRef", "name")
		t.desired[ns+"/"+kind+"/"+name] = true
	}
	return t
}

// targeted reports whether an HPA targets obj.
func (t *scaleTargets) targeted(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
	ns, key := obj.GetNamespace(), obj.GetKind()+"/"+obj.GetName()
	if t.desired[ns+"/"+key] {
		return true, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if set, ok := t.byNS[ns]; ok {
		return set[key], nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("autoscaling/v2")
	list.SetKind("HorizontalPodAutoscalerList")
	set := map[string]bool{}
	err := t.c.List(ctx, list, client.InNamespace(ns))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) && !meta.IsNoMatchError(err) {
		return false, fmt.Errorf("listing HorizontalPodAutoscalers: %w", err)
	}
	for _, hpa := range list.Items {
		kind, _, _ := unstructured.NestedString(hpa.Object, "spec", "scaleTargetRef", "kind")
		name, _, _ := unstructured.NestedString(hpa.Object, "spec", "scaleTargetRef", "name")
		set[kind+"/"+name] = true
	}
	t.byNS[ns] = set
	return set[key], nil
}

// scaledByOther reports whether another manager set spec.replicas of live through
// the scale subresource, the way the HPA controller (and kubectl scale) does.
func scaledByOther(live *unstructured.Unstructured, self string) bool {
	for _, e := range live.GetManagedFields() {
		if e.Subresource != "scale" || e.Manager == self || e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)) == nil && set.Has(replicasPath) {
			return true
		}
	}
	return false
}

// autoscaled reports whether spec.replicas of obj is left to an autoscaler.
func (t *scaleTargets) autoscaled(ctx context.Context, obj, live *unstructured.Unstructured, opts Options) (bool, error) {
	if !opts.IgnoreScaledReplicas {
		return false, nil
	}
	if _, declared, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas"); !declared {
		return false, nil
	}
	if scaledByOther(live, opts.FieldManager) {
		return true, nil
	}
	return t.targeted(ctx, obj)
}

// RevertedField is a field another manager had changed, that an apply set back to
// git's value: one round of a possible fight over the field.
type RevertedField struct {
	// Pointer is the field as a JSON pointer ("/spec/replicas"), the form of an
	// ignore rule that would end the fight.
	Pointer string
	// Path is the field as a dotted path, for messages.
	Path string
	// Manager is the manager whose value was reverted.
	Manager string
}

// reverted lists the fields that applying sent would take back from another
// manager: fields the other manager owns in live, that sent declares, and whose
// value the apply (dry, its dry-run) changes.
func reverted(live, dry, sent *unstructured.Unstructured, own owners, self string) []RevertedField {
	var out []RevertedField
	for manager, set := range own {
		if manager == self {
			continue
		}
		for _, p := range ownedLeaves(set, nil) {
			if _, declared := lookupPath(sent.Object, p); !declared {
				continue
			}
			was, _ := lookupPath(live.Object, p)
			now, _ := lookupPath(dry.Object, p)
			if equality.Semantic.DeepEqual(was, now) {
				continue
			}
			if ptr, ok := pointerOf(live.Object, p); ok {
				out = append(out, RevertedField{Pointer: ptr, Path: strings.TrimPrefix(p.String(), "."), Manager: manager})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pointer+out[i].Manager < out[j].Pointer+out[j].Manager })
	return out
}

// pointerOf writes p as a JSON pointer into obj, list elements by their index.
func pointerOf(obj map[string]any, p fieldpath.Path) (string, bool) {
	var b strings.Builder
	var cur any = obj
	for _, pe := range p {
		switch c := cur.(type) {
		case map[string]any:
			if pe.FieldName == nil {
				return "", false
			}
			b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(*pe.FieldName, "~", "~0"), "/", "~1"))
		case []any:
			i := indexOf(c, pe)
			if i < 0 {
				return "", false
			}
			b.WriteString("/" + strconv.Itoa(i))
		default:
			return "", false
		}
		var ok bool
		if cur, ok = lookupElement(cur, pe); !ok {
			return "", false
		}
	}
	return b.String(), true
}
