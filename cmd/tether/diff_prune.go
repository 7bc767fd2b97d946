package main

import (
	"context"
	"fmt"
	"io"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/plan"
)

// diffPrunes prints the objects a sync of d.sync would prune, or leave behind,
// because they left git, and reports whether there is any. The objects the Sync
// applied come from the inventory of the Sync in the cluster or, when it has none
// (a Sync not created yet, or whose status was lost), from the tether.dev/sync
// label. Which of them would go is decided by the agent's own prune, dry-run.
func diffPrunes(ctx context.Context, m *apply.Manager, d *desired, applied *apply.ChangeSet, w io.Writer) (bool, error) {
	inventory, err := appliedBefore(ctx, m, d)
	if err != nil {
		return false, err
	}
	stale := plan.LeftGit(inventory, applied)
	if held := plan.PruneHeld(d.sync, stale, len(inventory), len(d.objects) == 0); held != "" {
		for _, ref := range stale {
			if _, err := fmt.Fprintf(w, "diff %s (left in the cluster)\n# not in git any more; not pruned: %s\n", ref, held); err != nil {
				return true, err
			}
		}
		return true, nil
	}
	opts := plan.PruneOptionsFor(d.sync, applied, apply.DefaultOptions().Concurrency)
	opts.DryRun = true
	cs, err := m.Prune(ctx, stale, opts)
	differs := false
	for _, c := range cs.Changes {
		if c.Action != apply.ActionPruned {
			continue // gone already, someone else's, or protected: the agent leaves it
		}
		differs = true
		note := "not in git any more: the agent would delete it"
		if c.Note == apply.NoteTerminating {
			note = "not in git any more: being deleted"
		}
		if _, werr := fmt.Fprintf(w, "diff %s (pruned)\n# %s\n", c.Object, note); werr != nil {
			return differs, werr
		}
	}
	return differs, err
}

// appliedBefore lists the objects the Sync applied: its inventory, or the objects
// that carry its label and owner mark.
func appliedBefore(ctx context.Context, m *apply.Manager, d *desired) ([]v1alpha1.ObjectRef, error) {
	if d.live != nil {
		if refs := plan.Inventory(d.live.Status); len(refs) > 0 {
			return refs, nil
		}
	}
	s := d.sync
	refs, err := m.FindOwned(ctx, plan.FindOptionsFor(s))
	if err != nil {
		return nil, fmt.Errorf("finding the objects of Sync %s/%s by label %s: %w", s.Namespace, s.Name, v1alpha1.SyncLabel, err)
	}
	return refs, nil
}
