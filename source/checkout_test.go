package source_test

import (
	"path/filepath"
	"testing"

	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
)

// TestACheckoutRendersAChartAsTheAgentDoes: `tether preview` renders a commit
// of a local clone; a path holding a Chart.yaml renders as a chart with the
// Sync's release and values, not as plain YAML ("yaml: invalid map key").
func TestACheckoutRendersAChartAsTheAgentDoes(t *testing.T) {
	repo := gitserver.NewLocalRepo(t, "charts")
	commit := repo.Commit(t, map[string]string{
		"apps/web/Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"apps/web/values.yaml":       "greeting: one\ncolour: red\n",
		"apps/web/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\ndata:\n  greeting: {{ .Values.greeting | quote }}\n  colour: {{ .Values.colour | quote }}\n",
	}, "a chart")
	clone := filepath.Join(t.TempDir(), "clone")
	gitserver.Git(t, "", "clone", "--quiet", repo.FileURL(), clone)
	co, err := source.OpenCheckout(clone, source.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	objs, err := co.Render(t.Context(), commit, "apps/web", source.Directory{}, source.Helm{ReleaseName: "shop", Namespace: "tenant", Values: []byte(`{"colour":"blue"}`)}, nil)
	if err != nil {
		t.Fatalf("rendering the chart: %v", err)
	}
	if len(objs) != 1 || objs[0].GetName() != "shop-settings" {
		t.Fatalf("rendered %d objects (%v), want the ConfigMap shop-settings", len(objs), objs)
	}
	data := objs[0].Object["data"].(map[string]any)
	if data["greeting"] != "one" || data["colour"] != "blue" {
		t.Errorf("data = %v, want the chart's greeting and the Sync's colour", data)
	}
}
