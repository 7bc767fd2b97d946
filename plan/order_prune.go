package plan

import (
	"sort"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply/contract"
)

// PruneWave is the objects of one wave that a prune deletes together.
type PruneWave struct {
	Wave    int
	Objects []v1alpha1.ObjectRef
}

// PruneWaves orders what a prune would delete in reverse wave order: changes are a
// dry-run prune's, and each object it would delete (ActionPruned, with its live
// object) goes in the wave its live annotations name, the highest wave first, as
// Argo CD prunes. The wave is the one the object was applied with: the revision
// that had it is gone from git, the cluster still holds its annotations. A wave
// that cannot be read (edited in the cluster), or a live object that does not
// decode (never met: it was encoded from an answer), counts as 0. Within a wave
// apply.Prune keeps its own order (CRDs and Namespaces last).
func PruneWaves(changes []contract.Change) []PruneWave {
	byWave := map[int][]v1alpha1.ObjectRef{}
	for _, c := range changes {
		if c.Action != contract.ActionPruned || c.Live == nil {
			continue
		}
		wave := 0
		if live, err := c.Live.Decode(); err == nil {
			if o, err := OrderingOf(live.GetAnnotations()); err == nil {
				wave = o.Wave
			}
		}
		byWave[wave] = append(byWave[wave], c.Object)
	}
	out := make([]PruneWave, 0, len(byWave))
	for wave, refs := range byWave {
		sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
		out = append(out, PruneWave{Wave: wave, Objects: refs})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Wave > out[j].Wave })
	return out
}
