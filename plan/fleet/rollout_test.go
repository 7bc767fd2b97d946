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
			r := fleet.Roll(steps, tc.members)
			if diff := cmp.Diff(tc.want, r.Holds); diff != "" {
				t.Errorf("holds (-want +got):\n%s", diff)
			}
			if r.Step != tc.step || r.Halted != tc.halted || !strings.Contains(r.Message, tc.message) {
				t.Errorf("step %d halted %q message %q; want step %d halted %q message with %q", r.Step, r.Halted, r.Message, tc.step, tc.halted, tc.message)
			}
		})
	}
}
