package syncset

import (
	"context"
	"fmt"
	"strings"
	"time"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan/fleet"
	"tether.dev/tether/source"
)

// roll decides where each desired Sync stands in a rolling sync and writes it
// into desired: the commit it is pinned to (tether.dev/pin-revision), or its
// suspension while it has applied nothing and its step has not begun. Every Sync
// of a rolling SyncSet is pinned, so that a new commit reaches none of them
// before its step: the Syncs' own ref is only where the targets are read from.
// It returns the shortest interval of the Syncs' sources: a new revision
// reaches none of them but through the SyncSet, which must look as often as
// they would.
func (r *Reconciler) roll(ctx context.Context, ss *v1alpha1.SyncSet, rs *v1alpha1.RollingSyncStrategy, desired []*v1alpha1.Sync, live []v1alpha1.Sync, st *status) (time.Duration, error) {
	liveByName := make(map[string]*v1alpha1.Sync, len(live))
	for i := range live {
		liveByName[live[i].Name] = &live[i]
	}
	targets := map[string]string{} // by URL and ref
	members := make([]fleet.Member, 0, len(desired))
	every := time.Duration(0)
	for _, d := range desired {
		src := d.Spec.Source
		if src.URL == "" {
			continue // a packaged chart: it has no commit to pin
		}
		if i := src.IntervalOrDefault(); every == 0 || i < every {
			every = i
		}
		key := src.URL + "\x00" + src.Ref.String() + "\x00" + src.Ref.Commit
		target, ok := targets[key]
		if !ok {
			rev, err := r.Source.Fetch(ctx, source.Request{URL: src.URL, Ref: src.Ref, MaxAge: src.IntervalOrDefault(), Tenant: ss.Namespace})
			if err != nil {
				return 0, fmt.Errorf("resolving the revision to roll out to Sync %s: %w", d.Name, err)
			}
			target = rev.Commit
			targets[key] = target
		}
		members = append(members, memberOf(d, liveByName[d.Name], target))
	}
	ro := fleet.Roll(*rs, members)
	for _, d := range desired {
		h, ok := ro.Holds[d.Name]
		if !ok {
			continue
		}
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		// Empty values remove the notes of a rollback (fleet.Diff), and are
		// nothing on a Sync that has none.
		d.Annotations[v1alpha1.RolloutFromAnnotation] = h.From
		d.Annotations[v1alpha1.RolledBackAnnotation] = h.RolledBack
		if h.Suspend {
			d.Spec.Suspend = true
			continue
		}
		d.Annotations[v1alpha1.PinRevisionAnnotation] = h.Pin
		d.Annotations[v1alpha1.RolloutPinAnnotation] = h.Pin
	}
	st.rollout(ro, targets)
	return every, nil
}

// memberOf is what a rolling sync needs to know of a Sync: its labels as the
// template makes them, and, when it exists, its pin, the commit it last applied
// and its health there, once its status is of its current generation.
func memberOf(d, live *v1alpha1.Sync, target string) fleet.Member {
	m := fleet.Member{Name: d.Name, Labels: d.Labels, Target: target}
	if live == nil {
		return m
	}
	m.Pin = live.Annotations[v1alpha1.PinRevisionAnnotation]
	m.From = live.Annotations[v1alpha1.RolloutFromAnnotation]
	m.RolledBack = live.Annotations[v1alpha1.RolledBackAnnotation]
	m.Applied = commitOf(live.Status.LastAppliedRevision)
	if live.Status.ObservedGeneration == live.Generation {
		m.Healthy = live.Status.Health == v1alpha1.HealthHealthy
		m.Degraded = live.Status.Health == v1alpha1.HealthDegraded
	}
	return m
}

// commitOf reads the commit of a revision as status writes it
// ("main@sha1:<hash>", "sha1:<hash>").
func commitOf(revision string) string {
	if i := strings.LastIndex(revision, "sha1:"); i >= 0 {
		return revision[i+len("sha1:"):]
	}
	return ""
}

// unpin removes, from the Syncs of a SyncSet that rolls out no more, the pins a
// rolling sync set (those RolloutPinAnnotation repeats); a pin set by hand since
// stays.
func unpin(desired []*v1alpha1.Sync, live []v1alpha1.Sync) {
	ours := map[string]bool{}
	for _, l := range live {
		pin, ok := l.Annotations[v1alpha1.RolloutPinAnnotation]
		if ok {
			ours[l.Name] = pin == l.Annotations[v1alpha1.PinRevisionAnnotation]
		}
	}
	for _, d := range desired {
		mine, marked := ours[d.Name]
		if !marked {
			continue
		}
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[v1alpha1.RolloutPinAnnotation] = ""
		d.Annotations[v1alpha1.RolloutFromAnnotation] = ""
		d.Annotations[v1alpha1.RolledBackAnnotation] = ""
		if mine {
			d.Annotations[v1alpha1.PinRevisionAnnotation] = ""
		}
	}
}
