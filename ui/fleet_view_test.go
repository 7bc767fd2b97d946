package ui

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// mixedFleet is five Syncs of two namespaces: two of SyncSet web, one that
// applies to cluster prod-eu, the rest written by hand for the agent's own.
func mixedFleet() []v1alpha1.Sync {
	var syncs []v1alpha1.Sync
	for _, s := range []struct{ ns, name, set, cluster string }{
		{"shop", "web-eu", "web", "prod-eu"}, {"shop", "web-us", "web", ""}, {"shop", "db", "", ""},
		{"ops", "monitoring", "", ""}, {"ops", "alerts", "", "prod-eu"},
	} {
		sy := v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.name}, Spec: v1alpha1.SyncSpec{Destination: v1alpha1.DestinationSpec{Cluster: s.cluster}}}
		if s.set != "" {
			sy.Labels = map[string]string{v1alpha1.SyncSetLabel: s.set}
		}
		syncs = append(syncs, sy)
	}
	return syncs
}

func groupsOf(page fleetPage) []string {
	var got []string
	for _, g := range page.Groups {
		keys := make([]string, 0, len(g.Rows))
		for _, r := range g.Rows {
			keys = append(keys, r.Key)
		}
		got = append(got, fmt.Sprintf("%q %q %v Syncs=%d", g.Key, g.Title, keys, g.Counts[0].N))
	}
	return got
}

func TestTheFleetGroupsBySyncSetOrByCluster(t *testing.T) {
	for _, tc := range []struct {
		group string
		want  []string
	}{
		{"", []string{
			`"ops" "ops" [ops/alerts ops/monitoring] Syncs=2`,
			`"shop" "shop" [shop/db shop/web-eu shop/web-us] Syncs=3`,
		}},
		{"syncset", []string{
			`"ops/" "ops · no SyncSet" [ops/alerts ops/monitoring] Syncs=2`,
			`"shop/" "shop · no SyncSet" [shop/db] Syncs=1`,
			`"shop/web" "shop · SyncSet web" [shop/web-eu shop/web-us] Syncs=2`,
		}},
		{"cluster", []string{
			`"" "the agent's own cluster" [ops/monitoring shop/db shop/web-us] Syncs=3`,
			`"prod-eu" "cluster prod-eu" [ops/alerts shop/web-eu] Syncs=2`,
		}},
	} {
		t.Run("group="+tc.group, func(t *testing.T) {
			page := fleetPageOf(mixedFleet(), fleetFilter{group: tc.group})
			if diff := cmp.Diff(tc.want, groupsOf(page)); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("a group's counts are of all its Syncs, whatever the filter", func(t *testing.T) {
		page := fleetPageOf(mixedFleet(), fleetFilter{group: "cluster", search: "web"})
		want := []string{`"" "the agent's own cluster" [shop/web-us] Syncs=3`, `"prod-eu" "cluster prod-eu" [shop/web-eu] Syncs=2`}
		if diff := cmp.Diff(want, groupsOf(page)); diff != "" {
			t.Errorf("groups (-want +got):\n%s", diff)
		}
	})
	t.Run("the live stream counts the same groups", func(t *testing.T) {
		rows := fleetPageOf(mixedFleet(), fleetFilter{}).Rows
		counts := groupCounts(rows)
		if n := counts["syncset"]["shop/web"][0].N; n != 2 {
			t.Errorf("groupCounts counts %d Syncs of shop/web, want 2", n)
		}
		if n := counts["cluster"]["prod-eu"][0].N; n != 2 {
			t.Errorf("groupCounts counts %d Syncs of prod-eu, want 2", n)
		}
	})
}

func TestTheFleetLinksItsViewsAndGroupingsKeepingTheFilters(t *testing.T) {
	page := fleetPageOf(mixedFleet(), fleetFilter{search: "web", status: "OutOfSync", view: "tiles", group: "syncset"})
	want := []choice{
		{Label: "Table", URL: "/?group=syncset&q=web&status=OutOfSync"},
		{Label: "Tiles", URL: "/?group=syncset&q=web&status=OutOfSync&view=tiles", Current: true},
	}
	if diff := cmp.Diff(want, page.Views); diff != "" {
		t.Errorf("views (-want +got):\n%s", diff)
	}
	wantGroups := []choice{
		{Label: "namespace", URL: "/?q=web&status=OutOfSync&view=tiles"},
		{Label: "SyncSet", URL: "/?group=syncset&q=web&status=OutOfSync&view=tiles", Current: true},
		{Label: "cluster", URL: "/?group=cluster&q=web&status=OutOfSync&view=tiles"},
	}
	if diff := cmp.Diff(wantGroups, page.Groupings); diff != "" {
		t.Errorf("groupings (-want +got):\n%s", diff)
	}
	plain := fleetPageOf(fleetOf(3), fleetFilter{view: "no-such-view", group: "no-such-group"})
	if plain.View != "table" || plain.Group != "namespace" || len(plain.Groupings) != 1 || plain.Views[0].URL != "/" {
		t.Errorf("a fleet of no SyncSet and no other cluster, unknown view and group: view %q, group %q, groupings %+v, table %q; want the table by namespace, no other grouping offered",
			plain.View, plain.Group, plain.Groupings, plain.Views[0].URL)
	}
}

func TestTheTilesViewShowsEachSyncAsALinkWithItsStatusInWords(t *testing.T) {
	syncs := fleetOf(8)
	out := renderFleet(t, fleetPageOf(syncs, fleetFilter{view: "tiles"}))
	for _, want := range []string{
		// app-0000: OutOfSync, suspended and failing.
		`<a class="tile" data-key="team-0/app-0000" href="/syncs/team-0/app-0000">`,
		`<span class="tile-name">app-0000</span>`,
		`data-field="sync" data-value="OutOfSync">OutOfSync<`, `data-field="health" data-value="Healthy">Healthy<`,
		`data-field="ready" data-value="True">True<`, `data-field="suspended">suspended<`,
		`<code data-field="revision">main@0000000</code>`,
		`data-field="failingReason">RenderFailed<`,
		`<section class="ns-group tiles-group" data-ns="team-0" data-grouping="namespace" data-group="team-0" aria-label="Namespace team-0">`,
		`<input type="hidden" name="view" value="tiles">`,
		`<a href="/?view=tiles" aria-current="page">Tiles</a>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the tiles page lacks %q", want)
		}
	}
	if strings.Contains(out, "<table") || strings.Count(out, `class="tile"`) != 8 {
		t.Errorf("the tiles page has a table or not 8 tiles:\n%s", out)
	}
	byCluster := renderFleet(t, fleetPageOf(mixedFleet(), fleetFilter{view: "tiles", group: "cluster"}))
	for _, want := range []string{
		`data-grouping="cluster" data-group="prod-eu" aria-label="Cluster prod-eu"`,
		`<span class="tile-name">shop/web-eu</span>`,
	} {
		if !strings.Contains(byCluster, want) {
			t.Errorf("the tiles by cluster lack %q (a tile names its namespace when the group does not):\n%s", want, byCluster)
		}
	}
}

func TestTheTableIsGroupedAsTheTilesAre(t *testing.T) {
	out := renderFleet(t, fleetPageOf(mixedFleet(), fleetFilter{group: "cluster"}))
	for _, want := range []string{
		`<section class="ns-group" data-grouping="cluster" data-group="prod-eu" aria-label="Cluster prod-eu">`,
		`<h2>cluster prod-eu <span class="chips">`,
		`<section class="ns-group" data-grouping="cluster" data-group="" aria-label="The agent&#39;s own cluster">`,
		`<input type="hidden" name="group" value="cluster">`,
		`<a href="/?group=cluster&amp;view=tiles">Tiles</a>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table by cluster lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `class="tile"`) {
		t.Error("the table by cluster has tiles")
	}
}

// TestTheLiveStreamDeliversEachGroupsCounts: after a change, the stream's
// groupCounts carry the counts of the Sync's SyncSet and of its namespace.
func TestTheLiveStreamDeliversEachGroupsCounts(t *testing.T) {
	c := admin(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	inSet := func(s *v1alpha1.Sync) { s.Labels = map[string]string{v1alpha1.SyncSetLabel: "web"} }
	s := newSync(t, c, ns, "web-eu", inSet, readyStatus("main@sha1:aaaaaaaaaaaa", "first"))
	newSync(t, c, ns, "web-us", inSet, readyStatus("main@sha1:aaaaaaaaaaaa", "first"))
	newSync(t, c, ns, "db", nil, readyStatus("main@sha1:aaaaaaaaaaaa", "first"))
	b := startUI(t, controlplane.Shared(t).Config(), ns, false)
	if page := b.get("/?view=tiles&group=syncset"); !strings.Contains(page, `data-grouping="syncset" data-group="`+ns+`/web"`) {
		t.Errorf("the tiles by SyncSet do not name the group of SyncSet web:\n%s", page)
	}
	lines := openStream(t, b)

	s.Status.Sync = v1alpha1.SyncStatusOutOfSync
	harness.Must(t, c.Status().Update(t.Context(), s))

	awaitEvent(t, lines, "groupCounts", "SyncSet web's and the namespace's counts", func(data []byte) bool {
		var groups map[string]map[string][]count
		harness.Must(t, json.Unmarshal(data, &groups))
		set, namespace := map[string]int{}, map[string]int{}
		for _, n := range groups["syncset"][ns+"/web"] {
			set[n.Label] = n.N
		}
		for _, n := range groups["namespace"][ns] {
			namespace[n.Label] = n.N
		}
		return set["Syncs"] == 2 && set["OutOfSync"] == 1 && namespace["Syncs"] == 3 && namespace["OutOfSync"] == 1
	})
}
