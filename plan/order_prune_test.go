package plan_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply/contract"
	"tether.dev/tether/plan"
)

func TestPruneWavesDeleteTheHighestWaveFirst(t *testing.T) {
	t.Parallel()
	ref := func(kind, name string) v1alpha1.ObjectRef {
		return v1alpha1.ObjectRef{Version: "v1", Kind: kind, Namespace: "ns", Name: name}
	}
	pruned := func(kind, name string, annotations map[string]string) contract.Change {
		live := &unstructured.Unstructured{}
		live.SetAPIVersion("v1")
		live.SetKind(kind)
		live.SetAnnotations(annotations)
		kept, err := contract.NewObject(live)
		if err != nil {
			t.Fatal(err)
		}
		return contract.Change{Object: ref(kind, name), Action: contract.ActionPruned, Live: kept}
	}
	wave := func(w string) map[string]string { return map[string]string{"argocd.argoproj.io/sync-wave": w} }
	tests := []struct {
		name    string
		changes []contract.Change
		want    []plan.PruneWave
	}{
		{name: "nothing to prune", want: []plan.PruneWave{}},
		{
			name:    "objects without waves are one wave, as before",
			changes: []contract.Change{pruned("ConfigMap", "b", nil), pruned("ConfigMap", "a", nil)},
			want:    []plan.PruneWave{{Wave: 0, Objects: []v1alpha1.ObjectRef{ref("ConfigMap", "a"), ref("ConfigMap", "b")}}},
		},
		{
			name: "the highest wave first, the negative last",
			changes: []contract.Change{
				pruned("ConfigMap", "early", wave("-1")), pruned("ConfigMap", "plain", nil),
				pruned("ConfigMap", "late", wave("5")), pruned("Secret", "late", map[string]string{"tether.dev/wave": "5"}),
			},
			want: []plan.PruneWave{
				{Wave: 5, Objects: []v1alpha1.ObjectRef{ref("ConfigMap", "late"), ref("Secret", "late")}},
				{Wave: 0, Objects: []v1alpha1.ObjectRef{ref("ConfigMap", "plain")}},
				{Wave: -1, Objects: []v1alpha1.ObjectRef{ref("ConfigMap", "early")}},
			},
		},
		{
			name:    "Tether's wave wins over Argo CD's, as when applied",
			changes: []contract.Change{pruned("ConfigMap", "a", map[string]string{"tether.dev/wave": "1", "argocd.argoproj.io/sync-wave": "7"}), pruned("ConfigMap", "b", wave("3"))},
			want: []plan.PruneWave{
				{Wave: 3, Objects: []v1alpha1.ObjectRef{ref("ConfigMap", "b")}},
				{Wave: 1, Objects: []v1alpha1.ObjectRef{ref("ConfigMap", "a")}},
			},
		},
		{
			name:    "a wave edited into nonsense in the cluster counts as 0",
			changes: []contract.Change{pruned("ConfigMap", "odd", wave("first")), pruned("ConfigMap", "late", wave("2"))},
			want: []plan.PruneWave{
				{Wave: 2, Objects: []v1alpha1.ObjectRef{ref("ConfigMap", "late")}},
				{Wave: 0, Objects: []v1alpha1.ObjectRef{ref("ConfigMap", "odd")}},
			},
		},
		{
			name: "objects the prune would not delete are left out",
			changes: []contract.Change{
				{Object: ref("ConfigMap", "gone"), Action: contract.ActionSkipped, Note: contract.NoteGone},
				{Object: ref("ConfigMap", "theirs"), Action: contract.ActionSkipped, Note: contract.NoteNotOwned},
				pruned("ConfigMap", "mine", wave("1")),
			},
			want: []plan.PruneWave{{Wave: 1, Objects: []v1alpha1.ObjectRef{ref("ConfigMap", "mine")}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, plan.PruneWaves(tt.changes)); diff != "" {
				t.Errorf("PruneWaves (-want +got):\n%s", diff)
			}
		})
	}
}
