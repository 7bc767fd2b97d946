package apply

import (
	"encoding/json"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"tether.dev/tether/api/v1alpha1"
)

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
