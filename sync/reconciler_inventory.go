package sync

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/source"
)

// The inventory is status.resources: every object Tether applied for a Sync. It
// lives in the API, so a restarted agent prunes exactly what its predecessor
// applied. Entries are identified by group, kind, namespace and name (not version):
// an object whose apiVersion changes in git is the same object.

// heldError is a prune Tether refused to do on its own: an empty render or a prune
// over the limit. It stalls the Sync until git or the Sync changes.
type heldError struct {
	reason string
	msg    string
}

func (e *heldError) Error() string { return e.msg }

// Reasons of held prunes.
const (
	ReasonEmptyRender = "EmptyRender"
	ReasonPruneLimit  = "PruneLimitExceeded"
)

// checkEmpty refuses a render that yields no objects unless the Sync allows it: an
// emptied path is far more often a mistake (a bad merge, a moved directory) than an
// intent to delete everything.
func checkEmpty(obj *v1alpha1.Sync, snap *source.Snapshot) error {
	if len(snap.Objects) > 0 || obj.Spec.AllowEmpty {
		return nil
	}
	return &heldError{reason: ReasonEmptyRender, msg: fmt.Sprintf(
		"path %q renders no objects at %s; nothing was applied or pruned. Set spec.allowEmpty: true to prune everything this Sync applied",
		snap.Path, snap.Revision)}
}

// prune deletes what left git, within the Sync's limits, and records the outcome
// in the inventory. It runs only after an apply without failures.
func (r *Reconciler) prune(ctx context.Context, obj *v1alpha1.Sync, st *statusBuilder, snap *source.Snapshot, applied *apply.ChangeSet) (*apply.ChangeSet, error) {
	candidates := st.leftGit
	switch {
	case len(candidates) == 0:
		return nil, nil
	case !obj.Spec.PruneEnabled():
		st.leftGitNote("prune is off")
		return nil, nil
	}
	if err := checkPruneLimit(obj, len(candidates), st.inventorySize, len(snap.Objects) == 0); err != nil {
		st.leftGitNote("prune held back")
		return nil, err
	}
	cs, err := r.Applier.Prune(ctx, candidates, apply.PruneOptions{Owner: ownerOf(obj), Keep: liveUIDs(applied)})
	r.Metrics.CountChanges(obj, cs)
	st.pruned(cs, false)
	return cs, err
}

// checkPruneLimit refuses to prune more than spec.pruneLimit of the inventory at
// once; without an explicit limit, more than half. An empty render that the Sync
// allows (allowEmpty) may prune everything unless a limit is set explicitly.
func checkPruneLimit(obj *v1alpha1.Sync, prune, inventory int, empty bool) error {
	limit := obj.Spec.PruneLimit
	if limit == nil {
		if empty && obj.Spec.AllowEmpty {
			return nil
		}
		def := intstr.FromString(v1alpha1.DefaultPruneLimit)
		limit = &def
	}
	max, err := intstr.GetScaledValueFromIntOrPercent(limit, inventory, false)
	if err != nil {
		return &heldError{reason: ReasonPruneLimit, msg: fmt.Sprintf("spec.pruneLimit %q: %v", limit.String(), err)}
	}
	if prune <= max {
		return nil
	}
	return &heldError{reason: ReasonPruneLimit, msg: fmt.Sprintf(
		"%d of %d objects left git, more than the prune limit of %s (%d); nothing was pruned. "+
			"If this is intended, set spec.pruneLimit (for example \"100%%\") and it will proceed",
		prune, inventory, limit.String(), max)}
}

func ownerOf(obj *v1alpha1.Sync) string { return obj.Namespace + "/" + obj.Name }

// liveUIDs are the UIDs of the objects an apply left in the cluster.
func liveUIDs(cs *apply.ChangeSet) map[types.UID]bool {
	out := map[types.UID]bool{}
	if cs == nil {
		return out
	}
	for _, c := range cs.Changes {
		if c.Live != nil {
			out[c.Live.GetUID()] = true
		}
	}
	return out
}

func inventoryKey(group, kind, namespace, name string) string {
	return group + "/" + kind + "/" + namespace + "/" + name
}

func refOf(r v1alpha1.ResourceStatus) apply.ObjectRef {
	return apply.ObjectRef{Group: r.Group, Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

// pruneSummary names what a prune did, for events.
func pruneSummary(cs *apply.ChangeSet) string {
	if cs == nil {
		return ""
	}
	var names []string
	for _, c := range cs.Changes {
		if c.Action == apply.ActionPruned {
			names = append(names, c.Object.String())
		}
	}
	return strings.Join(names, ", ")
}
