package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// InventoryEntry is one object of status.inventory, parsed; not an API type itself.
//
// +kubebuilder:object:generate=false
type InventoryEntry struct {
	Group, Version, Kind string
	Namespace, Name      string
}

// ID is the entry's compact form in status.inventory:
// "<namespace>_<name>_<group>_<kind>_<version>". No namespace, group, kind or
// version can hold an underscore, so the form parses back even for the few kinds
// whose names may (RBAC roles).
func (e InventoryEntry) ID() string {
	return e.Namespace + "_" + e.Name + "_" + e.Group + "_" + e.Kind + "_" + e.Version
}

// Key identifies the object across versions of its kind: an object whose
// apiVersion changes in git is the same object.
func (e InventoryEntry) Key() string {
	return e.Group + "/" + e.Kind + "/" + e.Namespace + "/" + e.Name
}

// ParseInventoryEntry parses an id written by InventoryEntry.ID.
func ParseInventoryEntry(id string) (InventoryEntry, error) {
	ns, rest, ok := strings.Cut(id, "_")
	parts := strings.Split(rest, "_")
	if !ok || len(parts) < 4 {
		return InventoryEntry{}, fmt.Errorf("inventory entry %q is not <namespace>_<name>_<group>_<kind>_<version>", id)
	}
	n := len(parts)
	e := InventoryEntry{
		Namespace: ns, Name: strings.Join(parts[:n-3], "_"),
		Group: parts[n-3], Kind: parts[n-2], Version: parts[n-1],
	}
	if e.Name == "" || e.Kind == "" || e.Version == "" {
		return InventoryEntry{}, fmt.Errorf("inventory entry %q lacks a name, kind or version", id)
	}
	return e, nil
}

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
