package apply

import (
	"bytes"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Field owners: who holds which fields of a live object, read from its
// managedFields, so that a field Tether ignores is left to the manager that owns it.

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
