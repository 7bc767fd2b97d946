package sync_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
	tethersync "tether.dev/tether/sync"
)

func TestGitMetricsKeepOnlyURLsThatSyncsFetch(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := tethersync.NewMetrics(reg, tethersync.DefaultMetricsOptions())
	sync := func(name, url string) *v1alpha1.Sync {
		return &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: v1alpha1.SyncSpec{Source: v1alpha1.SourceSpec{URL: url}}}
	}
	urls := func() []string {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range families {
			if f.GetName() != "tether_git_fetch_duration_seconds" {
				continue
			}
			for _, metric := range f.GetMetric() {
				for _, l := range metric.GetLabel() {
					if l.GetName() == "url" {
						out = append(out, l.GetValue())
					}
				}
			}
		}
		return out
	}

	m.ObserveFetch(sync("a", "https://git.example.com/one.git"), time.Second, nil)
	m.ObserveFetch(sync("b", "https://git.example.com/one.git"), time.Second, nil)
	m.ObserveFetch(sync("c", "https://user:token@git.example.com/two.git"), time.Second, nil)
	if diff := cmp.Diff([]string{"https://git.example.com/one.git", "https://git.example.com/two.git"}, urls()); diff != "" {
		t.Errorf("url series (-want +got):\n%s", diff)
	}

	t.Run("a URL still fetched by another Sync keeps its series", func(t *testing.T) {
		m.ObserveFetch(sync("a", "https://git.example.com/three.git"), time.Second, nil)
		if diff := cmp.Diff([]string{"https://git.example.com/one.git", "https://git.example.com/three.git", "https://git.example.com/two.git"}, urls()); diff != "" {
			t.Errorf("url series (-want +got):\n%s", diff)
		}
	})
	t.Run("the series of a URL no Sync fetches any more are deleted", func(t *testing.T) {
		m.ObserveFetch(sync("b", "https://git.example.com/three.git"), time.Second, nil)
		m.Forget("ns", "c")
		if diff := cmp.Diff([]string{"https://git.example.com/three.git"}, urls()); diff != "" {
			t.Errorf("url series (-want +got):\n%s", diff)
		}
	})
}
