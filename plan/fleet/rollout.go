package fleet

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

// Member is one Sync of a rolling sync as the controller sees it.
type Member struct {
	Name   string
	Labels map[string]string
	// Target is the commit the Sync's ref names now: the revision to roll out.
	Target string
	// Pin is the commit the Sync is pinned to now (tether.dev/pin-revision), if any.
	Pin string
	// Applied is the commit of the Sync's lastAppliedRevision, if any.
	Applied string
	// Healthy and Degraded describe the Sync's health at Applied, when its status
	// is of its current generation.
	Healthy, Degraded bool
	// From is the commit the Sync was at before a rolling sync with rollback
	// moved it to Pin (tether.dev/rollout-from), and RolledBack the revision
	// it was rolled back from (tether.dev/rolled-back-from), if any.
	From, RolledBack string
}

// Hold is what a rolling sync decides for one Sync: the commit to pin it to,
// or, for a Sync that never applied anything and whose step has not begun,
// suspend it. With rollback, From is where the Sync goes back to should its
// step fail, and RolledBack the revision its step was rolled back from; both
// are empty without rollback, and for a Sync they do not concern.
type Hold struct {
	Pin     string
	Suspend bool
	From    string
	// RolledBack is the revision the Sync was rolled back from.
	RolledBack string
}

// Rollout is where a rolling sync stands and what it holds each Sync to.
type Rollout struct {
	Holds map[string]Hold
	// Step is the step rolling out, from 1; Steps+1 once every step is done.
	Step, Steps int
	// Halted names the Degraded Sync that stops the rollout, if one does.
	Halted string
	// RolledBack reports that the halted step went back to the commits its
	// Syncs had before it began.
	RolledBack bool
	// Message says where the rollout stands, for the Rollout condition.
	Message string
}

// Done reports whether every step is Healthy at its target.
func (r Rollout) Done() bool { return r.Step > r.Steps }

// Roll decides a rolling sync: the members are grouped into steps (a Sync
// belongs to the first step whose matchLabels it carries, and those no step
// selects to one more step at the end); the first step with a member not
// Healthy at its target is the current one. The steps before it are pinned at
// their targets, the steps after it are held where they are (at their pin, or
// the commit they applied, or suspended if they applied none), and the current
// step's members move to their targets at most maxUpdate at a time, none more
// once one of them is Degraded at its target. With rs.Rollback, a step with a
// Degraded member goes back: each of its Syncs that moved is pinned to the
// commit it came from, and stays there while the target is the one it was
// rolled back from.
func Roll(rs v1alpha1.RollingSyncStrategy, members []Member) Rollout {
	groups := group(rs.Steps, members)
	r := Rollout{Holds: make(map[string]Hold, len(members)), Steps: len(groups), Step: len(groups) + 1}
	for i, g := range groups {
		if r.Step <= len(groups) {
			for _, m := range g.members {
				r.Holds[m.Name] = held(m)
			}
			continue
		}
		if allDone(g.members) {
			for _, m := range g.members {
				r.Holds[m.Name] = Hold{Pin: m.Target}
			}
			continue
		}
		r.Step = i + 1
		if rs.Rollback {
			r.rollWithRollback(g)
		} else {
			r.roll(g)
		}
	}
	if r.Done() {
		r.Message = fmt.Sprintf("all %d steps are Healthy at their revision", r.Steps)
	}
	return r
}

type stepGroup struct {
	members   []Member
	maxUpdate *intstr.IntOrString
}

func group(steps []v1alpha1.RollingSyncStep, members []Member) []stepGroup {
	groups := make([]stepGroup, len(steps), len(steps)+1)
	selectors := make([]labels.Selector, len(steps))
	for i, s := range steps {
		groups[i].maxUpdate = s.MaxUpdate
		selectors[i] = labels.SelectorFromSet(s.MatchLabels)
	}
	var rest []Member
	sorted := append([]Member(nil), members...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, m := range sorted {
		placed := false
		for i, sel := range selectors {
			if sel.Matches(labels.Set(m.Labels)) {
				groups[i].members = append(groups[i].members, m)
				placed = true
				break
			}
		}
		if !placed {
			rest = append(rest, m)
		}
	}
	if len(rest) > 0 {
		groups = append(groups, stepGroup{members: rest})
	}
	return groups
}

func done(m Member) bool { return m.Applied == m.Target && m.Healthy }

func allDone(ms []Member) bool {
	for _, m := range ms {
		if !done(m) {
			return false
		}
	}
	return true
}

// held keeps a Sync of a step not begun where it is.
func held(m Member) Hold {
	switch {
	case m.Pin != "":
		return Hold{Pin: m.Pin}
	case m.Applied != "":
		return Hold{Pin: m.Applied}
	}
	return Hold{Suspend: true}
}

// roll moves the current step: members at their target stay there; the others
// join them, in name order, while fewer than maxUpdate are on their way and
// none of the step is Degraded at its target.
func (r *Rollout) roll(g stepGroup) {
	max := len(g.members)
	if g.maxUpdate != nil {
		n, err := intstr.GetScaledValueFromIntOrPercent(g.maxUpdate, len(g.members), true)
		if err == nil && n >= 1 {
			max = n
		}
	}
	updating := 0
	var degraded []string
	for _, m := range g.members {
		if m.Pin == m.Target && !done(m) {
			updating++
		}
		if m.Applied == m.Target && m.Degraded {
			degraded = append(degraded, m.Name)
		}
	}
	for _, m := range g.members {
		switch {
		case m.Pin == m.Target || done(m):
			r.Holds[m.Name] = Hold{Pin: m.Target}
		case len(degraded) == 0 && updating < max:
			r.Holds[m.Name] = Hold{Pin: m.Target}
			updating++
		default:
			r.Holds[m.Name] = held(m)
		}
	}
	if len(degraded) > 0 {
		r.Halted = degraded[0]
		r.Message = fmt.Sprintf("step %d of %d halted: %s Degraded at its new revision; the later steps stay where they are", r.Step, r.Steps, strings.Join(degraded, ", "))
		return
	}
	r.Message = fmt.Sprintf("step %d of %d rolling out: %d of its %d Syncs moving at once", r.Step, r.Steps, updating, len(g.members))
}

// rollWithRollback moves the current step as roll does, noting on each Sync it
// moves where it came from; once a Sync of the step is Degraded at its target,
// or the step was rolled back from this target before, every Sync of the step
// that moved goes back to where it came from.
func (r *Rollout) rollWithRollback(g stepGroup) {
	var failed []string
	target := ""
	for _, m := range g.members {
		if (m.Applied == m.Target && m.Degraded) || m.RolledBack == m.Target {
			failed = append(failed, m.Name)
			if target == "" {
				target = m.Target
			}
		}
	}
	if len(failed) == 0 {
		r.roll(g)
		for _, m := range g.members {
			if h := r.Holds[m.Name]; h.Pin == m.Target {
				h.From = m.From
				if m.Pin != m.Target {
					h.From = held(m).Pin // moving now: from where it is held
				}
				r.Holds[m.Name] = h
			}
		}
		return
	}
	var stayed []string
	for _, m := range g.members {
		moved := m.Pin == m.Target || m.RolledBack == m.Target
		switch {
		case moved && m.From != "":
			r.Holds[m.Name] = Hold{Pin: m.From, From: m.From, RolledBack: m.Target}
		case moved:
			// Nothing to go back to: it had applied nothing before.
			r.Holds[m.Name] = Hold{Pin: m.Target}
			stayed = append(stayed, m.Name)
		default:
			r.Holds[m.Name] = held(m)
		}
	}
	r.Halted, r.RolledBack = failed[0], true
	r.Message = fmt.Sprintf("step %d of %d rolled back: %s failed at the new revision %s; its Syncs are back at the commits they had, and the later steps stay where they are, until a new revision", r.Step, r.Steps, strings.Join(failed, ", "), plan.ShortRevision("sha1:"+target))
	if len(stayed) > 0 {
		r.Message += fmt.Sprintf("; %s applied nothing before it and stayed there", strings.Join(stayed, ", "))
	}
}
