package fleet

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"tether.dev/tether/api/v1alpha1"
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
}

// Hold is what a rolling sync decides for one Sync: the commit to pin it to,
// or, for a Sync that never applied anything and whose step has not begun,
// suspend it.
type Hold struct {
	Pin     string
	Suspend bool
}

// Rollout is where a rolling sync stands and what it holds each Sync to.
type Rollout struct {
	Holds map[string]Hold
	// Step is the step rolling out, from 1; Steps+1 once every step is done.
	Step, Steps int
	// Halted names the Degraded Sync that stops the rollout, if one does.
	Halted string
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
// once one of them is Degraded at its target.
func Roll(steps []v1alpha1.RollingSyncStep, members []Member) Rollout {
	groups := group(steps, members)
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
		r.roll(g)
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
