package plan_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"tether.dev/tether/plan"
)

func TestOrderingOf(t *testing.T) {
	t.Parallel()
	pre, post := []plan.Phase{plan.PhasePreSync}, []plan.Phase{plan.PhasePostSync}
	byDefault := []plan.DeletePolicy{plan.BeforeHookCreation}
	tests := []struct {
		name        string
		annotations map[string]string
		want        plan.Ordering
		wantErr     string // the annotation named in the error
	}{
		{name: "an object without annotations is wave 0 and no hook", annotations: nil, want: plan.Ordering{}},
		{name: "Tether's wave", annotations: map[string]string{"tether.dev/wave": "-1"}, want: plan.Ordering{Wave: -1}},
		{name: "Argo CD's wave", annotations: map[string]string{"argocd.argoproj.io/sync-wave": " 5 "}, want: plan.Ordering{Wave: 5}},
		{name: "Tether's wave wins over Argo CD's", annotations: map[string]string{"tether.dev/wave": "2", "argocd.argoproj.io/sync-wave": "9"}, want: plan.Ordering{Wave: 2}},
		{name: "a wave that is no integer", annotations: map[string]string{"argocd.argoproj.io/sync-wave": "first"}, wantErr: "argocd.argoproj.io/sync-wave"},
		{name: "a wave out of range", annotations: map[string]string{"tether.dev/wave": "99999999999"}, wantErr: "tether.dev/wave"},
		{
			name:        "a hook without a delete policy is deleted before it is created again, as in Argo CD",
			annotations: map[string]string{"argocd.argoproj.io/hook": "PreSync"},
			want:        plan.Ordering{Phases: pre, Policies: byDefault},
		},
		{
			name:        "a hook of two phases with two policies",
			annotations: map[string]string{"tether.dev/hook": "PreSync, PostSync", "tether.dev/hook-delete-policy": "HookSucceeded,HookFailed", "tether.dev/wave": "3"},
			want:        plan.Ordering{Wave: 3, Phases: []plan.Phase{plan.PhasePreSync, plan.PhasePostSync}, Policies: []plan.DeletePolicy{plan.HookSucceeded, plan.HookFailed}},
		},
		{
			name:        "Tether's hook wins over Argo CD's",
			annotations: map[string]string{"tether.dev/hook": "PostSync", "argocd.argoproj.io/hook": "PreSync"},
			want:        plan.Ordering{Phases: post, Policies: byDefault},
		},
		{name: "Argo CD's Skip is not applied", annotations: map[string]string{"argocd.argoproj.io/hook": "Skip"}, want: plan.Ordering{Skip: true}},
		{name: "an unknown phase", annotations: map[string]string{"argocd.argoproj.io/hook": "PreDelete"}, wantErr: "argocd.argoproj.io/hook"},
		{name: "an unknown delete policy", annotations: map[string]string{"tether.dev/hook": "Sync", "tether.dev/hook-delete-policy": "Never"}, wantErr: "tether.dev/hook-delete-policy"},
		{
			name:        "Helm's pre-install and pre-upgrade run PreSync, the weight is the wave",
			annotations: map[string]string{"helm.sh/hook": "pre-install,pre-upgrade", "helm.sh/hook-weight": "-5", "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded"},
			want:        plan.Ordering{Wave: -5, Phases: pre, Policies: []plan.DeletePolicy{plan.BeforeHookCreation, plan.HookSucceeded}},
		},
		{name: "Helm's post-upgrade runs PostSync", annotations: map[string]string{"helm.sh/hook": "post-upgrade"}, want: plan.Ordering{Phases: post, Policies: byDefault}},
		{name: "Helm's test hooks are skipped", annotations: map[string]string{"helm.sh/hook": "test"}, want: plan.Ordering{Skip: true}},
		{name: "Helm's rollback and delete hooks are skipped", annotations: map[string]string{"helm.sh/hook": "pre-delete,post-rollback"}, want: plan.Ordering{Skip: true}},
		{name: "Helm's crd-install is an ordinary object", annotations: map[string]string{"helm.sh/hook": "crd-install"}, want: plan.Ordering{}},
		{name: "Helm's weight is the wave of an object that is no hook, as in Argo CD", annotations: map[string]string{"helm.sh/hook-weight": "2"}, want: plan.Ordering{Wave: 2}},
		{name: "Helm's weight is the wave of Argo CD's hook without a wave", annotations: map[string]string{"argocd.argoproj.io/hook": "Sync", "helm.sh/hook-weight": "-3"}, want: plan.Ordering{Wave: -3, Phases: []plan.Phase{plan.PhaseSync}, Policies: byDefault}},
		{name: "Argo CD's wave wins over Helm's weight", annotations: map[string]string{"argocd.argoproj.io/sync-wave": "1", "helm.sh/hook-weight": "5"}, want: plan.Ordering{Wave: 1}},
		{name: "a bad Helm weight on an object that is no hook", annotations: map[string]string{"helm.sh/hook-weight": "heavy"}, wantErr: "helm.sh/hook-weight"},
		{name: "Helm's hook with a bad weight", annotations: map[string]string{"helm.sh/hook": "pre-install", "helm.sh/hook-weight": "x"}, wantErr: "helm.sh/hook-weight"},
		{
			name:        "Argo CD's hook wins over Helm's, as Argo CD reads a chart",
			annotations: map[string]string{"helm.sh/hook": "pre-install", "argocd.argoproj.io/hook": "PostSync"},
			want:        plan.Ordering{Phases: post, Policies: byDefault},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := plan.OrderingOf(tt.annotations)
			if tt.wantErr != "" {
				var ae *plan.AnnotationError
				if !errors.As(err, &ae) || ae.Annotation != tt.wantErr {
					t.Fatalf("OrderingOf() error = %v, want an *AnnotationError naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("OrderingOf(): %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("OrderingOf() (-want +got):\n%s", diff)
			}
		})
	}
}
