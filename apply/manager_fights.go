package apply

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Fights: the fields an apply took back from another manager, which the caller
// counts to detect a manager that keeps changing them back.

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
