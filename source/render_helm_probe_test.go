package source

import (
	"testing"

	"tether.dev/tether/test/gitserver"
)

// A revision the cache does not hold yet says nothing about whether its path
// holds a chart: once fetched, the chart renders as a chart.
func TestAChartProbeOfACommitNotFetchedIsNotRemembered(t *testing.T) {
	repo := gitserver.NewLocalRepo(t, "chart")
	commit := repo.Commit(t, map[string]string{
		"app/Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"app/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\n",
	}, "a chart")
	s := newCacheTestSource(t, Options{})
	rev := Revision{URL: repo.URL(), Ref: "main", Commit: commit}
	if _, err := s.Render(t.Context(), rev, "app", Helm{ReleaseName: "shop"}); err == nil {
		t.Fatal("rendered a commit the cache does not hold")
	}
	mustFetch(t, s, repo.URL())
	snap, err := s.Render(t.Context(), rev, "app", Helm{ReleaseName: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Objects) != 1 || snap.Objects[0].GetName() != "shop" {
		t.Errorf("want the chart's ConfigMap shop, got %v", snap.Objects)
	}
}
