package v1alpha1

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// maxLabelValue is the longest value a label may have.
const maxLabelValue = 63

// SyncLabelValue is the value of SyncLabel on the objects the Sync namespace/name
// applies: "<namespace>.<name>" when that fits in a label value (namespaces hold no
// dot, so it is unambiguous), else a hash of the two.
func SyncLabelValue(namespace, name string) string {
	v := namespace + "." + name
	if len(v) <= maxLabelValue {
		return v
	}
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	return "sha256-" + hex.EncodeToString(sum[:])[:48]
}

// NewInventory is refs in the form of status.objects: one group per kind (group,
// version, kind) and namespace, the groups sorted by namespace, group, kind and
// version, and each group's names sorted and listed once. No refs is no groups.
func NewInventory(refs []ObjectRef) []InventoryGroup {
	type groupKey struct{ namespace, group, kind, version string }
	names := map[groupKey][]string{}
	for _, r := range refs {
		k := groupKey{r.Namespace, r.Group, r.Kind, r.Version}
		names[k] = append(names[k], r.Name)
	}
	if len(names) == 0 {
		return nil
	}
	groups := make([]InventoryGroup, 0, len(names))
	for k, n := range names {
		slices.Sort(n)
		groups = append(groups, InventoryGroup{Group: k.group, Version: k.version, Kind: k.kind, Namespace: k.namespace, Names: slices.Compact(n)})
	}
	slices.SortFunc(groups, func(a, b InventoryGroup) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Group, b.Group),
			cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Version, b.Version))
	})
	return groups
}

// InventoryRefs lists the objects of groups (status.objects), leaving out what
// Tether cannot have written: a group without kind or version, an empty name.
// Nothing can be pruned by such an entry.
func InventoryRefs(groups []InventoryGroup) []ObjectRef {
	n := 0
	for _, g := range groups {
		n += len(g.Names)
	}
	refs := make([]ObjectRef, 0, n)
	for _, g := range groups {
		if g.Kind == "" || g.Version == "" {
			continue
		}
		for _, name := range g.Names {
			if name != "" {
				refs = append(refs, ObjectRef{Group: g.Group, Version: g.Version, Kind: g.Kind, Namespace: g.Namespace, Name: name})
			}
		}
	}
	return refs
}

// InventoryBytes is what groups take in status.objects, as JSON (names that JSON
// escapes are counted unescaped: no name Kubernetes accepts needs more than a few
// escapes).
func InventoryBytes(groups []InventoryGroup) int {
	n := len("[]") + max(len(groups)-1, 0) // the commas between groups
	for _, g := range groups {
		n += len(`{"version":"","kind":"","names":[]}`) + len(g.Version) + len(g.Kind)
		if g.Group != "" {
			n += len(`"group":"",`) + len(g.Group)
		}
		if g.Namespace != "" {
			n += len(`"namespace":"",`) + len(g.Namespace)
		}
		n += max(len(g.Names)-1, 0)
		for _, name := range g.Names {
			n += len(name) + len(`""`)
		}
	}
	return n
}
