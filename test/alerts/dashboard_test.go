package alerts

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/promserver"
)

// dashboardPath is the shipped Grafana dashboard.
const dashboardPath = "../../deploy/monitoring/dashboards/tether.json"

// grafanaVariables are what Grafana substitutes in a panel's query before sending
// it: the test's Prometheus scrapes every second, so a minute holds many samples.
var grafanaVariables = strings.NewReplacer(
	"$__rate_interval", "1m",
	"$__interval", "1s",
	"$__range", "5m",
)

// panelQuery is one query of one panel of the dashboard.
type panelQuery struct {
	panel, expr string
}

// dashboardQueries reads every panel's queries from the dashboard.
func dashboardQueries(t *testing.T) []panelQuery {
	t.Helper()
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	var out []panelQuery
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			out = append(out, panelQuery{panel: p.Title, expr: target.Expr})
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no panel queries", dashboardPath)
	}
	return out
}

// checkDashboard runs every panel's query against prom, which has scraped agents
// that have done each kind of work the dashboard shows, and requires each to parse
// and return data.
func checkDashboard(t *testing.T, prom *promserver.Server) {
	t.Helper()
	for _, q := range dashboardQueries(t) {
		expr := grafanaVariables.Replace(q.expr)
		harness.Eventually(t, waitTimeout, "panel "+q.panel+" shows data: "+expr, func(ctx context.Context) (bool, error) {
			vec, err := prom.Query(ctx, expr)
			return len(vec) > 0, err
		})
	}
}
