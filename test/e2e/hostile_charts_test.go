package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/chartrepo"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// hostileChartRSSLimit bounds the agent's resident memory (VmHWM) while it
// meets one hostile chart after another: what the render wall keeps out of the
// agent is never counted there, whatever the chart did in its worker.
const hostileChartRSSLimit = 256 << 20

const hostileChartYAML = "apiVersion: v2\nname: hostile\nversion: 0.1.0\n"

// TestEachHostileChartCostsTheAgentLittle runs the shipped binary at its
// default flags against the chart inputs that once ended the agent or cost it
// gigabytes (the render-wall issue's reproductions), one at a time, while a
// neighbour Sync keeps applying pushes: each hostile Sync says which limit it
// met, the neighbour applies each push within two of its intervals, and the
// agent's peak RSS stays within hostileChartRSSLimit.
func TestEachHostileChartCostsTheAgentLittle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the agent against hostile charts")
	}
	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{})
	a := startAgent(t)

	healthy := git.CreateRepo(t, "neighbour")
	first := healthy.Commit(t, map[string]string{"app/cm.yaml": fmt.Sprintf(appConfig, "hello")}, "hello")
	const interval = 10 * time.Second
	neighbour := gitSync(ns, "neighbour", healthy.URL(), "app", interval)
	createSync(t, c, neighbour)
	waitRevision(t, c, neighbour, first)

	// A subchart archive whose values file is a list of 300,000 items: 1.2 MB
	// that packs into a few KiB, over the bound of nodes a file may hold.
	var items strings.Builder
	items.WriteString("items:\n")
	for range 300_000 {
		items.WriteString("- 1\n")
	}
	nested := string(chartrepo.Package(t, chartrepo.ChartOf(t, map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"values.yaml": items.String(),
	}), "0.1.0"))

	// An index of 32 MiB whose entries for the asked-for chart are empty.
	repo := chartrepo.Start(t, chartrepo.Options{})
	repo.SetIndex([]byte(`{"entries":{"webapp":[` + strings.Repeat("{},", (32<<20-4<<10)/3) + "{}]}}"))

	chartOf := func(template string, extra map[string]string) map[string]string {
		files := map[string]string{
			"app/Chart.yaml":       hostileChartYAML,
			"app/values.yaml":      "x: \"{{ tpl .Values.x . }}\"\nbig: " + strings.Repeat("b", 64<<10) + "\n",
			"app/templates/t.yaml": template,
		}
		for name, content := range extra {
			files[name] = content
		}
		return files
	}
	cases := []struct {
		name  string
		files map[string]string // a chart in git at app/, or
		chart *v1alpha1.ChartSource
		says  string
	}{
		{name: "tpl calling itself", files: chartOf(`{{ tpl .Values.x . }}`, nil),
			says: "tpl nests more than 64 deep in hostile/templates/t.yaml"},
		{name: "a string doubled by print", files: chartOf(`{{ $s := "xxxxxxxxxxxxxxxx" }}{{ range until 40 }}{{ $s = print $s $s }}{{ end }}{{ len $s }}`, nil),
			says: "print would make more than"},
		{name: "a dict doubled, then toJson", files: chartOf(`{{ $d := dict "a" "b" }}{{ range until 40 }}{{ $d = dict "l" $d "r" $d }}{{ end }}{{ toJson $d | len }}`, nil),
			says: "toJson would make more than"},
		{name: "a large value printed a million times", files: chartOf(`{{ range until 1000000 }}{{ $.Values.big }}{{ end }}`, nil),
			says: "more memory than a render may use"},
		{name: "a nested archive of many YAML nodes", files: chartOf(`{}`, map[string]string{"app/charts/sub-0.1.0.tgz": nested}),
			says: "YAML nodes"},
		{name: "an index of empty entries", chart: &v1alpha1.ChartSource{Repository: repo.URL, Name: "webapp"},
			says: "more than 20000 versions"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &v1alpha1.Sync{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("hostile-%d", i), Namespace: ns},
				Spec: v1alpha1.SyncSpec{
					Source:      v1alpha1.SourceSpec{Chart: tc.chart, Interval: &metav1.Duration{Duration: time.Second}},
					Destination: v1alpha1.DestinationSpec{Namespace: ns},
				},
			}
			if tc.files != nil {
				r := git.CreateRepo(t, s.Name)
				r.Commit(t, tc.files, tc.name)
				s = gitSync(ns, s.Name, r.URL(), "app", time.Second)
			}
			createSync(t, c, s)
			harness.Eventually(t, waitTimeout, s.Name+" says which limit it met", func(ctx context.Context) (bool, error) {
				got := &v1alpha1.Sync{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
					return false, err
				}
				ready := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
				if ready == nil || ready.Status != metav1.ConditionFalse {
					return false, nil
				}
				if ready.Reason != v1alpha1.ReasonRenderLimitExceeded || !strings.Contains(ready.Message, tc.says) {
					return false, fmt.Errorf("Ready is %s %q; want %s saying %q", ready.Reason, ready.Message, v1alpha1.ReasonRenderLimitExceeded, tc.says)
				}
				return true, nil
			})

			// The hostile Sync keeps retrying while the neighbour applies a push.
			commit := healthy.Commit(t, map[string]string{"app/cm.yaml": fmt.Sprintf(appConfig, s.Name)}, "push")
			pushed := time.Now()
			waitRevisionWithin(t, c, neighbour, commit, 2*interval)
			t.Logf("the neighbour applied a push after %s", time.Since(pushed).Round(100*time.Millisecond))

			a.running(t)
			peak := peakRSS(t, a.cmd.Process.Pid)
			t.Logf("agent peak RSS (VmHWM) so far: %d MiB (limit %d MiB)", peak>>20, hostileChartRSSLimit>>20)
			if peak > hostileChartRSSLimit {
				t.Errorf("the agent's peak RSS was %d MiB; want at most %d MiB", peak>>20, hostileChartRSSLimit>>20)
			}
			harness.Must(t, c.Delete(t.Context(), s))
			waitGone(t, c, s)
		})
	}
}
