package fleet

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"tether.dev/tether/api/v1alpha1"
)

// Changes is what the controller must do to make the live Syncs of a SyncSet
// those its generators yield.
type Changes struct {
	// Create are the Syncs to make.
	Create []*v1alpha1.Sync
	// Update are live Syncs (copies) with the desired labels, annotations and spec
	// written over them: a template change, a parameter change or a hand edit.
	Update []*v1alpha1.Sync
	// Delete are live Syncs the generators no longer yield, unless Held.
	Delete []*v1alpha1.Sync
	// Held, when not empty, says why the Syncs in Kept are kept although the
	// generators no longer yield them.
	Held string
	Kept []*v1alpha1.Sync
}

// Diff compares the desired Syncs with the live ones the SyncSet owns, by name.
// Deletions are held, all of them, when the generators yielded nothing at all
// (an emptied listing is taken for a mistake, as an empty render is) or when
// more of the live Syncs would go than limit (a count or a percentage of them,
// rounded down) allows.
func Diff(desired []*v1alpha1.Sync, live []v1alpha1.Sync, limit intstr.IntOrString) (Changes, error) {
	var ch Changes
	liveByName := make(map[string]*v1alpha1.Sync, len(live))
	for i := range live {
		liveByName[live[i].Name] = &live[i]
	}
	wanted := make(map[string]bool, len(desired))
	for _, d := range desired {
		wanted[d.Name] = true
		l, ok := liveByName[d.Name]
		if !ok {
			ch.Create = append(ch.Create, d)
			continue
		}
		if u, changed := updated(l, d); changed {
			ch.Update = append(ch.Update, u)
		}
	}
	for i := range live {
		if !wanted[live[i].Name] {
			ch.Delete = append(ch.Delete, &live[i])
		}
	}
	sort.Slice(ch.Delete, func(i, j int) bool { return ch.Delete[i].Name < ch.Delete[j].Name })
	if len(ch.Delete) == 0 {
		return ch, nil
	}
	if len(desired) == 0 {
		ch.Held = fmt.Sprintf("the generators yielded no Sync; the %d Syncs are kept, as an empty listing is more often a mistake "+
			"than an intent (delete the SyncSet, or its Syncs, to remove them)", len(ch.Delete))
	} else {
		max, err := intstr.GetScaledValueFromIntOrPercent(&limit, len(live), false)
		if err != nil {
			return Changes{}, &Error{Reason: v1alpha1.ReasonGenerateFailed, Err: fmt.Errorf("spec.generatedLimit %q: %w", limit.String(), err)}
		}
		if len(ch.Delete) > max {
			ch.Held = fmt.Sprintf("%d of %d Syncs are no longer generated, more than spec.generatedLimit %s (%d) lets go; none was deleted. "+
				"If this is intended, raise spec.generatedLimit (for example \"100%%\")", len(ch.Delete), len(live), limit.String(), max)
		}
	}
	if ch.Held != "" {
		ch.Kept, ch.Delete = ch.Delete, nil
	}
	return ch, nil
}

// updated returns a copy of live with desired's labels, annotations and spec,
// and whether anything differed. Labels and annotations others added are kept
// (a desired value "" removes its key);
// the spec is compared as desired says it, so that the defaults the API server
// filled in (prune, ref, path, interval) are no difference, and then suspend
// apart, since desired's false is a value too (a rolling sync lifts it).
func updated(live, desired *v1alpha1.Sync) (*v1alpha1.Sync, bool) {
	changed := false
	out := live.DeepCopy()
	for _, m := range []struct{ want, have *map[string]string }{
		{&desired.Labels, &out.Labels}, {&desired.Annotations, &out.Annotations},
	} {
		for k, v := range *m.want {
			if _, ok := (*m.have)[k]; ok && v == "" {
				delete(*m.have, k) // an empty value removes the key (a rollout's pin)
				changed = true
				continue
			}
			if cur, ok := (*m.have)[k]; (!ok && v != "") || (ok && cur != v) {
				if *m.have == nil {
					*m.have = map[string]string{}
				}
				(*m.have)[k] = v
				changed = true
			}
		}
	}
	if !equality.Semantic.DeepDerivative(desired.Spec, live.Spec) || desired.Spec.Suspend != live.Spec.Suspend {
		out.Spec = desired.Spec
		changed = true
	}
	// preserveSyncsOnDeletion turned on or off: the Syncs lose or gain their owner.
	if (metav1.GetControllerOf(desired) == nil) != (metav1.GetControllerOf(live) == nil) {
		out.OwnerReferences = desired.OwnerReferences
		changed = true
	}
	return out, changed
}
