package fleet_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan/fleet"
)

func syncNamed(name, path string) *v1alpha1.Sync {
	return &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.SyncSetLabel: "s"}},
		Spec: v1alpha1.SyncSpec{Source: v1alpha1.SourceSpec{URL: "https://x/y.git", Path: path}}}
}

func names(syncs []*v1alpha1.Sync) []string {
	out := []string{}
	for _, s := range syncs {
		out = append(out, s.Name)
	}
	return out
}

func live(syncs ...*v1alpha1.Sync) []v1alpha1.Sync {
	out := make([]v1alpha1.Sync, 0, len(syncs))
	for _, s := range syncs {
		l := s.DeepCopy()
		// What the API server defaults is no difference.
		yes := true
		l.Spec.Prune, l.Spec.SelfHeal = &yes, &yes
		l.Spec.Source.Ref = v1alpha1.GitRef{Branch: "main"}
		l.Spec.Source.Interval = &metav1.Duration{Duration: v1alpha1.DefaultInterval}
		l.Labels["team"] = "added-by-hand"
		out = append(out, *l)
	}
	return out
}

func TestDiffMakesKeepsAndDeletesSyncsWithinTheLimit(t *testing.T) {
	half := intstr.FromString("50%")
	a, b, c, d := syncNamed("a", "apps/a"), syncNamed("b", "apps/b"), syncNamed("c", "apps/c"), syncNamed("d", "apps/d")
	edited := live(b)[0]
	edited.Spec.Source.Path = "apps/elsewhere"
	suspended := live(c)[0]
	suspended.Spec.Suspend = true

	for _, tc := range []struct {
		name                          string
		desired                       []*v1alpha1.Sync
		live                          []v1alpha1.Sync
		limit                         intstr.IntOrString
		create, update, deleted, kept []string
		held                          string
	}{
		{name: "a converged fleet changes nothing", desired: []*v1alpha1.Sync{a, b}, live: live(a, b), limit: half,
			create: []string{}, update: []string{}, deleted: []string{}, kept: []string{}},
		{name: "a directory added makes a Sync, one removed deletes its Sync", desired: []*v1alpha1.Sync{a, b, d}, live: live(a, b, c), limit: half,
			create: []string{"d"}, update: []string{}, deleted: []string{"c"}, kept: []string{}},
		{name: "a hand edit of a templated field or of suspend is reverted", desired: []*v1alpha1.Sync{a, b, c}, live: append(live(a), edited, suspended), limit: half,
			create: []string{}, update: []string{"b", "c"}, deleted: []string{}, kept: []string{}},
		{name: "an emptied listing deletes nothing, whatever the limit", desired: nil, live: live(a, b), limit: intstr.FromString("100%"),
			create: []string{}, update: []string{}, deleted: []string{}, kept: []string{"a", "b"}, held: "the generators yielded no Sync; the 2 Syncs are kept"},
		{name: "far fewer Syncs than before delete nothing", desired: []*v1alpha1.Sync{a}, live: live(a, b, c, d), limit: half,
			create: []string{}, update: []string{}, deleted: []string{}, kept: []string{"b", "c", "d"}, held: "3 of 4 Syncs are no longer generated, more than spec.generatedLimit 50% (2)"},
		{name: "a raised limit lets them go", desired: []*v1alpha1.Sync{a}, live: live(a, b, c, d), limit: intstr.FromInt32(3),
			create: []string{}, update: []string{}, deleted: []string{"b", "c", "d"}, kept: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := fleet.Diff(tc.desired, tc.live, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			got := [][]string{names(ch.Create), names(ch.Update), names(ch.Delete), names(ch.Kept)}
			if diff := cmp.Diff([][]string{tc.create, tc.update, tc.deleted, tc.kept}, got); diff != "" {
				t.Errorf("create, update, delete, kept (-want +got):\n%s", diff)
			}
			if !strings.Contains(ch.Held, tc.held) || (tc.held == "") != (ch.Held == "") {
				t.Errorf("held %q, want %q", ch.Held, tc.held)
			}
			for _, u := range ch.Update {
				if u.Labels["team"] != "added-by-hand" {
					t.Errorf("%s: a label added by hand was dropped", u.Name)
				}
			}
		})
	}
}

func TestAnEmptyDesiredAnnotationRemovesIt(t *testing.T) {
	pinned := syncNamed("a", "apps/a")
	pinned.Annotations = map[string]string{v1alpha1.PinRevisionAnnotation: "abc", "kept": "yes"}
	want := syncNamed("a", "apps/a")
	want.Annotations = map[string]string{v1alpha1.PinRevisionAnnotation: ""}
	ch, err := fleet.Diff([]*v1alpha1.Sync{want}, live(pinned), intstr.FromString("50%"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Update) != 1 {
		t.Fatalf("updates %v; want a", names(ch.Update))
	}
	if diff := cmp.Diff(map[string]string{"kept": "yes"}, ch.Update[0].Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	ch, _ = fleet.Diff([]*v1alpha1.Sync{want}, live(syncNamed("a", "apps/a")), intstr.FromString("50%"))
	if len(ch.Update) != 0 {
		t.Errorf("an empty value for a key the Sync lacks updated it")
	}
}
