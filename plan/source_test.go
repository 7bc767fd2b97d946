package plan_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/source/result"
)

func TestASyncMapsToOneSourceRequest(t *testing.T) {
	git := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}}
	git.Spec.Source.URL = "https://git.example.com/org/deploy.git"
	git.Spec.Source.Ref = v1alpha1.GitRef{Branch: "main"}
	git.Spec.Source.Path = "apps/web"
	git.Spec.Source.Interval = &metav1.Duration{Duration: time.Minute}
	want := result.Request{URL: "https://git.example.com/org/deploy.git", Ref: v1alpha1.GitRef{Branch: "main"}, Tenant: "team-a"}
	if diff := cmp.Diff(want, plan.RequestOf(git)); diff != "" {
		t.Errorf("RequestOf (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(result.ChartRequest{}, plan.ChartRequestOf(git)); diff != "" {
		t.Errorf("ChartRequestOf a Sync of git, want the zero request (-want +got):\n%s", diff)
	}

	chart := git.DeepCopy()
	chart.Spec.Source.URL, chart.Spec.Source.Ref = "", v1alpha1.GitRef{}
	chart.Spec.Source.Chart = &v1alpha1.ChartSource{Repository: "https://charts.example.com", Name: "podinfo", Version: "6.x"}
	wantChart := result.ChartRequest{Repository: "https://charts.example.com", Name: "podinfo", Version: "6.x"}
	if diff := cmp.Diff(wantChart, plan.ChartRequestOf(chart)); diff != "" {
		t.Errorf("ChartRequestOf (-want +got):\n%s", diff)
	}
}
