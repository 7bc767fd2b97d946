package fleet_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan/fleet"
)

// BenchmarkAConvergedReconcileOf1000Directories measures what plan/fleet costs
// one reconcile of a converged SyncSet over 1,000 directories: generate the
// sets, make the Syncs, diff them with the live ones (nothing to change).
func BenchmarkAConvergedReconcileOf1000Directories(b *testing.B) {
	dirs := make([]string, 1000)
	for i := range dirs {
		dirs[i] = fmt.Sprintf("apps/app-%04d", i)
	}
	ss := syncSet("{{path.basenameNormalized}}",
		`{"source": {"url": "https://git.example.com/mono.git", "path": "{{path}}"}, "destination": {"namespace": "{{path.basenameNormalized}}"}}`,
		map[string]string{"app": "{{path.basename}}"})
	ss.Spec.Generators = []v1alpha1.SyncSetGenerator{{Git: dirsGen("apps/*")}}
	listings := map[string]fleet.Listing{"generators[0]": {Dirs: dirs}}
	makeAll := func() []*v1alpha1.Sync {
		sets, err := fleet.Generate(&ss.Spec, listings)
		if err != nil {
			b.Fatal(err)
		}
		out := make([]*v1alpha1.Sync, 0, len(sets))
		for _, s := range sets {
			sy, err := fleet.Make(ss, s)
			if err != nil {
				b.Fatal(err)
			}
			out = append(out, sy)
		}
		return out
	}
	live := make([]v1alpha1.Sync, 0, len(dirs))
	for _, s := range makeAll() {
		live = append(live, *s)
	}
	limit := intstr.FromString("50%")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ch, err := fleet.Diff(makeAll(), live, limit)
		if err != nil || len(ch.Create)+len(ch.Update)+len(ch.Delete) != 0 {
			b.Fatalf("a converged fleet changed: %+v, %v", ch, err)
		}
	}
}
