package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
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
