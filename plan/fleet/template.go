package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"tether.dev/tether/api/v1alpha1"
)

// placeholder is {{ name }} or {{ name | function }}: a name of letters, digits,
// '.', '_', '-' and a [N] index, and at most one function.
var placeholder = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_.\-\[\]]+)\s*(?:\|\s*([a-z]+)\s*)?\}\}`)

// functions are the string functions a placeholder may pipe into.
var functions = map[string]func(string) string{
	"lower":     strings.ToLower,
	"upper":     strings.ToUpper,
	"normalize": Normalize,
}

// powerFields are the template spec's fields that decide what a Sync may do:
// they come from the SyncSet as written, never from a parameter. A field is
// named by its JSON path with "[]" for any list item.
var powerFields = []string{
	"spec.serviceAccountName",
	"spec.dependsOn[].namespace",
	"spec.destination.kubeConfig",
	"spec.destination.cluster",
}

// Substitute fills the placeholders of s from params. A placeholder naming no
// parameter, or piping into an unknown function, is an error: a Sync made with
// a hole in it would apply something nobody wrote.
func Substitute(s string, params Params) (string, error) {
	if !strings.Contains(s, "{{") {
		return s, nil
	}
	var err error
	out := placeholder.ReplaceAllStringFunc(s, func(m string) string {
		sub := placeholder.FindStringSubmatch(m)
		v, ok := params[sub[1]]
		if !ok {
			if err == nil {
				err = fmt.Errorf("{{%s}} names no parameter (the set has %s)", sub[1], strings.Join(firstKeys(params, 12), ", "))
			}
			return m
		}
		if sub[2] != "" {
			f, ok := functions[sub[2]]
			if !ok {
				if err == nil {
					err = fmt.Errorf("{{%s | %s}}: no such function (lower, upper, normalize)", sub[1], sub[2])
				}
				return m
			}
			v = f(v)
		}
		return v
	})
	return out, err
}

func firstKeys(p Params, n int) []string {
	keys := p.Keys()
	if len(keys) > n {
		keys = append(keys[:n], "…")
	}
	return keys
}

// Make returns the Sync the SyncSet's template makes of set: in the SyncSet's
// namespace, labelled with its name (v1alpha1.SyncSetLabel) and owned by it
// unless spec.preserveSyncsOnDeletion says otherwise. It
// refuses (ParameterRefused) a template with a placeholder in a field that
// decides power, and (GenerateFailed) one that makes an invalid name, label or
// spec, naming set.Entry.
func Make(ss *v1alpha1.SyncSet, set Set) (*v1alpha1.Sync, error) {
	fail := func(reason string, err error) (*v1alpha1.Sync, error) {
		return nil, &Error{Entry: set.Entry, Reason: reason, Err: err}
	}
	t := ss.Spec.Template
	name, err := Substitute(t.Metadata.Name, set.Params)
	if err != nil {
		return fail(v1alpha1.ReasonGenerateFailed, fmt.Errorf("metadata.name: %w", err))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fail(v1alpha1.ReasonGenerateFailed, fmt.Errorf("metadata.name %q: %s", name, strings.Join(errs, "; ")))
	}
	labels, err := substituteMap("metadata.labels", t.Metadata.Labels, set.Params, true)
	if err != nil {
		return fail(v1alpha1.ReasonGenerateFailed, err)
	}
	if _, ok := t.Metadata.Labels[v1alpha1.ShardLabel]; ok {
		return fail(v1alpha1.ReasonGenerateFailed, fmt.Errorf("metadata.labels[%s]: a SyncSet's Syncs are served by the agent that serves the SyncSet", v1alpha1.ShardLabel))
	}
	annotations, err := substituteMap("metadata.annotations", t.Metadata.Annotations, set.Params, false)
	if err != nil {
		return fail(v1alpha1.ReasonGenerateFailed, err)
	}
	spec, reason, err := makeSpec(t.Spec.Raw, set)
	if err != nil {
		return fail(reason, err)
	}
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1alpha1.SyncSetLabel] = ss.Name
	s := &v1alpha1.Sync{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Sync"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ss.Namespace, Labels: labels, Annotations: annotations},
		Spec:       *spec,
	}
	if !ss.Spec.PreserveSyncsOnDeletion {
		// Owned, the Syncs go with the SyncSet (the garbage collector deletes them,
		// and each prunes or orphans as its deletionPolicy says); unowned, they stay.
		yes := true
		s.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "SyncSet", Name: ss.Name, UID: ss.UID,
			Controller: &yes,
		}}
	}
	return s, nil
}

func substituteMap(field string, in map[string]string, params Params, label bool) (map[string]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		s, err := Substitute(v, params)
		if err != nil {
			return nil, fmt.Errorf("%s[%s]: %w", field, k, err)
		}
		if label {
			if errs := validation.IsValidLabelValue(s); len(errs) > 0 {
				return nil, fmt.Errorf("%s[%s] %q: %s", field, k, s, strings.Join(errs, "; "))
			}
		}
		out[k] = s
	}
	return out, nil
}

// makeSpec fills the placeholders of every string of the template's spec and
// reads the result as a Sync's spec, refusing unknown fields.
func makeSpec(raw []byte, set Set) (*v1alpha1.SyncSpec, string, error) {
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, v1alpha1.ReasonGenerateFailed, fmt.Errorf("spec: %w", err)
	}
	placeCluster(tree, set)
	tree, reason, err := fill(tree, "spec", set.Params)
	if err != nil {
		return nil, reason, err
	}
	js, err := json.Marshal(tree)
	if err != nil {
		return nil, v1alpha1.ReasonGenerateFailed, fmt.Errorf("spec: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	spec := &v1alpha1.SyncSpec{}
	if err := dec.Decode(spec); err != nil {
		return nil, v1alpha1.ReasonGenerateFailed, fmt.Errorf("spec is not a Sync's spec: %w", err)
	}
	if ns := spec.Destination.Namespace; ns != "" {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, v1alpha1.ReasonGenerateFailed, fmt.Errorf("spec.destination.namespace %q: %s", ns, strings.Join(errs, "; "))
		}
	}
	return spec, "", nil
}

// ClusterPlaceholder is the one placeholder a power field takes: a template's
// spec.destination.cluster written as it, in a set a clusters generator made,
// becomes that registered cluster's name. Anything else there, a parameter of
// the same name from git included, is refused as every placeholder in a power
// field is.
const ClusterPlaceholder = "{{cluster}}"

// placeCluster writes set's cluster into tree's destination.cluster when the
// template writes ClusterPlaceholder there and a clusters generator made set.
func placeCluster(tree any, set Set) {
	spec, _ := tree.(map[string]any)
	dest, _ := spec["destination"].(map[string]any)
	if dest != nil && dest["cluster"] == ClusterPlaceholder && set.Cluster != "" {
		dest["cluster"] = set.Cluster
	}
}

// fill substitutes the strings below v, at the JSON path at.
func fill(v any, at string, params Params) (any, string, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, el := range x {
			filled, reason, err := fill(el, at+"."+k, params)
			if err != nil {
				return nil, reason, err
			}
			x[k] = filled
		}
		return x, "", nil
	case []any:
		for i, el := range x {
			filled, reason, err := fill(el, at+"[]", params)
			if err != nil {
				return nil, reason, fmt.Errorf("%w (item %s)", err, strconv.Itoa(i))
			}
			x[i] = filled
		}
		return x, "", nil
	case string:
		if !strings.Contains(x, "{{") {
			return x, "", nil
		}
		if power(at) {
			return nil, v1alpha1.ReasonParameterRefused, fmt.Errorf(
				"%s takes a placeholder (%q): what a Sync may do comes from the SyncSet's own spec, never from a parameter", at, x)
		}
		s, err := Substitute(x, params)
		if err != nil {
			return nil, v1alpha1.ReasonGenerateFailed, fmt.Errorf("%s: %w", at, err)
		}
		return s, "", nil
	}
	return v, "", nil
}

func power(at string) bool {
	for _, p := range powerFields {
		if at == p || strings.HasPrefix(at, p+".") || strings.HasPrefix(at, p+"[") {
			return true
		}
	}
	return false
}

// TemplateAccount is the template's spec.serviceAccountName as written: the
// account every Sync of the SyncSet acts as (a power field, never a
// parameter), "" for none. A git generator's credentials are read as it.
func TemplateAccount(ss *v1alpha1.SyncSet) (string, error) {
	var spec struct {
		ServiceAccountName string `json:"serviceAccountName"`
	}
	if len(ss.Spec.Template.Spec.Raw) > 0 {
		if err := json.Unmarshal(ss.Spec.Template.Spec.Raw, &spec); err != nil {
			return "", &Error{Entry: "template", Reason: v1alpha1.ReasonGenerateFailed, Err: fmt.Errorf("spec: %w", err)}
		}
	}
	if strings.Contains(spec.ServiceAccountName, "{{") {
		return "", &Error{Entry: "template", Reason: v1alpha1.ReasonParameterRefused,
			Err: errors.New("spec.serviceAccountName decides what a Sync may do and comes from the SyncSet as written, never from a parameter")}
	}
	return spec.ServiceAccountName, nil
}
