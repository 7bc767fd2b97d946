package fleet_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan/fleet"
)

const oldC, newC = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"

func member(name, env, pin, applied string, healthy, degraded bool) fleet.Member {
	return fleet.Member{Name: name, Labels: map[string]string{"env": env}, Target: newC, Pin: pin, Applied: applied, Healthy: healthy, Degraded: degraded}
}

func TestARollingSyncMovesStepByStep(t *testing.T) {
	one := intstr.FromInt32(1)
	steps := []v1alpha1.RollingSyncStep{
		{MatchLabels: map[string]string{"env": "staging"}},
		{MatchLabels: map[string]string{"env": "prod"}, MaxUpdate: &one},
	}
	pinOld, pinNew := fleet.Hold{Pin: oldC}, fleet.Hold{Pin: newC}
	for _, tc := range []struct {
		name    string
		members []fleet.Member
		want    map[string]fleet.Hold
		step    int
		halted  string
		message string
	}{{
		name: "a new revision moves the first step and holds the rest",
		members: []fleet.Member{member("s1", "staging", oldC, oldC, true, false), member("p1", "prod", oldC, oldC, true, false),
			member("x1", "dev", oldC, oldC, true, false)},
		want: map[string]fleet.Hold{"s1": pinNew, "p1": pinOld, "x1": pinOld}, step: 1, message: "step 1 of 3 rolling out",
	}, {
		name: "a step Healthy at the new revision lets the next begin, one Sync at a time",
		members: []fleet.Member{member("s1", "staging", newC, newC, true, false), member("p1", "prod", oldC, oldC, true, false),
			member("p2", "prod", oldC, oldC, true, false)},
		want: map[string]fleet.Hold{"s1": pinNew, "p1": pinNew, "p2": pinOld}, step: 2,
	}, {
		name:    "a step still progressing keeps its place",
		members: []fleet.Member{member("s1", "staging", newC, newC, false, false), member("p1", "prod", oldC, oldC, true, false)},
		want:    map[string]fleet.Hold{"s1": pinNew, "p1": pinOld}, step: 1,
	}, {
		name: "a Degraded Sync halts its step and the later ones",
		members: []fleet.Member{member("s1", "staging", newC, newC, true, false), member("p1", "prod", newC, newC, false, true),
			member("p2", "prod", oldC, oldC, true, false), member("x1", "dev", oldC, oldC, true, false)},
		want: map[string]fleet.Hold{"s1": pinNew, "p1": pinNew, "p2": pinOld, "x1": pinOld}, step: 2, halted: "p1",
		message: "step 2 of 3 halted: p1 Degraded",
	}, {
		name:    "a new Sync of a step not begun is suspended",
		members: []fleet.Member{member("s1", "staging", "", "", false, false), member("p1", "prod", "", "", false, false)},
		want:    map[string]fleet.Hold{"s1": pinNew, "p1": {Suspend: true}}, step: 1,
	}, {
		name:    "every step Healthy at the new revision is done",
		members: []fleet.Member{member("s1", "staging", newC, newC, true, false), member("p1", "prod", newC, newC, true, false)},
		want:    map[string]fleet.Hold{"s1": pinNew, "p1": pinNew}, step: 3, message: "all 2 steps are Healthy",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := fleet.Roll(v1alpha1.RollingSyncStrategy{Steps: steps}, tc.members)
			if diff := cmp.Diff(tc.want, r.Holds); diff != "" {
				t.Errorf("holds (-want +got):\n%s", diff)
			}
			if r.Step != tc.step || r.Halted != tc.halted || !strings.Contains(r.Message, tc.message) {
				t.Errorf("step %d halted %q message %q; want step %d halted %q message with %q", r.Step, r.Halted, r.Message, tc.step, tc.halted, tc.message)
			}
		})
	}
}

// rolled is a member as a rolling sync with rollback left it: come from the
// old commit, rolled back from rolledBack ("" for not).
func rolled(m fleet.Member, rolledBack string) fleet.Member {
	m.From, m.RolledBack = oldC, rolledBack
	return m
}

func TestARollingSyncWithRollbackTakesAFailedStepBack(t *testing.T) {
	steps := []v1alpha1.RollingSyncStep{
		{MatchLabels: map[string]string{"env": "staging"}},
		{MatchLabels: map[string]string{"env": "prod"}},
	}
	back := fleet.Hold{Pin: oldC, From: oldC, RolledBack: newC}
	for _, tc := range []struct {
		name       string
		members    []fleet.Member
		want       map[string]fleet.Hold
		rolledBack bool
		halted     string
		message    string
	}{{
		name: "a Sync moving to the new revision notes where it came from",
		members: []fleet.Member{member("s1", "staging", oldC, oldC, true, false), member("s2", "staging", "", "", false, false),
			member("p1", "prod", oldC, oldC, true, false)},
		want: map[string]fleet.Hold{"s1": {Pin: newC, From: oldC}, "s2": {Pin: newC}, "p1": {Pin: oldC}},
	}, {
		name: "a Sync already moving keeps its note",
		members: []fleet.Member{rolled(member("s1", "staging", newC, oldC, false, false), ""),
			member("p1", "prod", oldC, oldC, true, false)},
		want: map[string]fleet.Hold{"s1": {Pin: newC, From: oldC}, "p1": {Pin: oldC}},
	}, {
		name: "a Degraded Sync takes its whole step back, the Healthy ones too",
		members: []fleet.Member{rolled(member("s1", "staging", newC, newC, false, true), ""),
			rolled(member("s2", "staging", newC, newC, true, false), ""), member("p1", "prod", oldC, oldC, true, false)},
		want:       map[string]fleet.Hold{"s1": back, "s2": back, "p1": {Pin: oldC}},
		rolledBack: true, halted: "s1", message: "step 1 of 2 rolled back: s1 failed at the new revision 2222222",
	}, {
		name: "a step rolled back stays back while the revision is the one it failed at",
		members: []fleet.Member{rolled(member("s1", "staging", oldC, oldC, true, false), newC),
			rolled(member("s2", "staging", oldC, oldC, true, false), newC), member("p1", "prod", oldC, oldC, true, false)},
		want:       map[string]fleet.Hold{"s1": back, "s2": back, "p1": {Pin: oldC}},
		rolledBack: true, halted: "s1",
	}, {
		name: "a Sync that had applied nothing before stays at the new revision, and says so",
		members: []fleet.Member{member("s1", "staging", newC, newC, false, true), rolled(member("s2", "staging", newC, newC, true, false), ""),
			member("p1", "prod", "", "", false, false)},
		want:       map[string]fleet.Hold{"s1": {Pin: newC}, "s2": back, "p1": {Suspend: true}},
		rolledBack: true, halted: "s1", message: "s1 applied nothing before it and stayed there",
	}, {
		name: "a newer revision than the one rolled back from rolls out again",
		members: []fleet.Member{
			rolled(fleet.Member{Name: "s1", Labels: map[string]string{"env": "staging"}, Target: "3333333333333333333333333333333333333333", Pin: oldC, Applied: oldC, Healthy: true}, newC),
			member("p1", "prod", oldC, oldC, true, false)},
		want: map[string]fleet.Hold{"s1": {Pin: "3333333333333333333333333333333333333333", From: oldC}, "p1": {Pin: oldC}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := fleet.Roll(v1alpha1.RollingSyncStrategy{Steps: steps, Rollback: true}, tc.members)
			if diff := cmp.Diff(tc.want, r.Holds); diff != "" {
				t.Errorf("holds (-want +got):\n%s", diff)
			}
			if r.RolledBack != tc.rolledBack || r.Halted != tc.halted || !strings.Contains(r.Message, tc.message) {
				t.Errorf("rolled back %v halted %q message %q; want %v, %q, a message with %q", r.RolledBack, r.Halted, r.Message, tc.rolledBack, tc.halted, tc.message)
			}
		})
	}
}
