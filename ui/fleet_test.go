package ui

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
)

func TestFleetListsSyncsWithTheirStatus(t *testing.T) {
	c := admin(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	newSync(t, c, ns, "web", nil, readyStatus("main@sha1:4f2c1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b", "Add the web app"))
	newSync(t, c, ns, "held", func(s *v1alpha1.Sync) { s.Spec.Suspend = true }, v1alpha1.SyncStatus{})
	b := startUI(t, controlplane.Shared(t).Config(), "default", true)

	page := b.get("/?namespace=" + ns)
	t.Run("every Sync of the namespace is a row with its status in words", func(t *testing.T) {
		for _, want := range []string{
			`data-key="` + ns + `/web"`, `data-key="` + ns + `/held"`,
			`<a href="/syncs/` + ns + `/web">web</a>`,
			`data-value="Synced">Synced<`, `data-value="Healthy">Healthy<`, `data-value="True">True<`,
			"main@4f2c1a2", "Add the web app", ">suspended<",
		} {
			if !strings.Contains(page, want) {
				t.Errorf("the fleet page lacks %q:\n%s", want, page)
			}
		}
	})
	t.Run("the counts head the page", func(t *testing.T) {
		if !strings.Contains(page, `<span class="n" data-count="Syncs">`) || !strings.Contains(page, "Suspended</li>") {
			t.Errorf("no counts:\n%s", page)
		}
	})
	t.Run("the status filter keeps the Syncs that pass it", func(t *testing.T) {
		page := b.get("/?namespace=" + ns + "&status=Suspended")
		if !strings.Contains(page, `data-key="`+ns+`/held"`) || strings.Contains(page, `data-key="`+ns+`/web"`) {
			t.Errorf("status=Suspended: want held alone:\n%s", page)
		}
	})
	t.Run("the namespace filter keeps the namespace's Syncs", func(t *testing.T) {
		page := b.get("/?namespace=no-such-namespace")
		if strings.Contains(page, `data-key="`+ns) || !strings.Contains(page, "No Syncs match the filter") {
			t.Errorf("namespace=no-such-namespace: want no rows:\n%s", page)
		}
	})
}

// fleetOf is n Syncs over ten namespaces: every third OutOfSync, every fifth
// suspended, every seventh Stalled.
func fleetOf(n int) []v1alpha1.Sync {
	syncs := make([]v1alpha1.Sync, n)
	for i := range syncs {
		s := &syncs[i]
		s.Namespace, s.Name, s.Generation = fmt.Sprintf("team-%d", i%10), fmt.Sprintf("app-%04d", i), 1
		s.Status = readyStatus(fmt.Sprintf("main@sha1:%040x", i), fmt.Sprintf("Release %d of the app", i))
		if i%3 == 0 {
			s.Status.Sync = v1alpha1.SyncStatusOutOfSync
		}
		s.Spec.Suspend = i%5 == 0
		s.Labels = map[string]string{"tier": []string{"web", "db"}[i%2]}
		if i%7 == 0 {
			s.Status.Conditions = append(s.Status.Conditions, metav1.Condition{Type: v1alpha1.StalledCondition, Status: metav1.ConditionTrue,
				Reason: v1alpha1.ReasonRenderFailed, Message: "kustomization.yaml: broken", ObservedGeneration: 1})
		}
	}
	return syncs
}

func TestFleetPageFiltersAndCounts(t *testing.T) {
	syncs := fleetOf(30)
	page := fleetPageOf(syncs, fleetFilter{})
	want := []count{{"Syncs", 30}, {"OutOfSync", 10}, {"NotReady", 0}, {"Failing", 5}, {"Degraded", 0}, {"Progressing", 0}, {"Suspended", 6}}
	if diff := cmp.Diff(want, page.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if len(page.Rows) != 30 || len(page.Namespaces) != 10 || page.Rows[0].Key != "team-0/app-0000" {
		t.Errorf("unfiltered: %d rows, namespaces %v, first %q", len(page.Rows), page.Namespaces, page.Rows[0].Key)
	}
	filtered := fleetPageOf(syncs, fleetFilter{namespace: "team-0", status: "Failing"})
	var keys []string
	for _, r := range filtered.Rows {
		keys = append(keys, r.Key)
	}
	if diff := cmp.Diff([]string{"team-0/app-0000"}, keys); diff != "" {
		t.Errorf("team-0 and Failing (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, filtered.Counts); diff != "" {
		t.Errorf("the counts are of every Sync, whatever the filter (-want +got):\n%s", diff)
	}
	if got := len(fleetPageOf(syncs, fleetFilter{status: "no-such-status"}).Rows); got != 30 {
		t.Errorf("an unknown status filter kept %d rows, want all 30", got)
	}
	if got := fleetPageOf(syncs, fleetFilter{label: "tier=db", status: "Suspended"}).Rows; len(got) != 3 || got[0].Key != "team-5/app-0005" {
		t.Errorf("tier=db and Suspended: %+v, want app-0005, -0015 and -0025", got)
	}
	if got := fleetPageOf(syncs, fleetFilter{search: "TEAM-3 app-002"}).Rows; len(got) != 1 || got[0].Key != "team-3/app-0023" {
		t.Errorf("search \"TEAM-3 app-002\": %+v, want team-3/app-0023 alone (every word, any case)", got)
	}
	if page := fleetPageOf(syncs, fleetFilter{label: "tier in (db"}); page.LabelError == "" || len(page.Rows) != 30 {
		t.Errorf("a broken selector: error %q, %d rows; want the error and every row", page.LabelError, len(page.Rows))
	}
}

func TestFleetPageGroupsByNamespaceWithTheirCounts(t *testing.T) {
	syncs := fleetOf(30)
	page := fleetPageOf(syncs, fleetFilter{status: "Failing"})
	var got []string
	for _, g := range page.Groups {
		keys := make([]string, 0, len(g.Rows))
		for _, r := range g.Rows {
			keys = append(keys, r.Key)
		}
		got = append(got, fmt.Sprintf("%s %v %v", g.Namespace, keys, g.Counts))
	}
	// Failing are app-0000, -0007, -0014, -0021 and -0028; each namespace's
	// counts are of all its Syncs (team-0: 0, 10 and 20, all suspended, 0
	// OutOfSync), not of those shown.
	want := []string{
		"team-0 [team-0/app-0000] [{Syncs 3} {OutOfSync 1} {NotReady 0} {Failing 1} {Degraded 0} {Progressing 0} {Suspended 3}]",
		"team-1 [team-1/app-0021] [{Syncs 3} {OutOfSync 1} {NotReady 0} {Failing 1} {Degraded 0} {Progressing 0} {Suspended 0}]",
		"team-4 [team-4/app-0014] [{Syncs 3} {OutOfSync 1} {NotReady 0} {Failing 1} {Degraded 0} {Progressing 0} {Suspended 0}]",
		"team-7 [team-7/app-0007] [{Syncs 3} {OutOfSync 1} {NotReady 0} {Failing 1} {Degraded 0} {Progressing 0} {Suspended 0}]",
		"team-8 [team-8/app-0028] [{Syncs 3} {OutOfSync 1} {NotReady 0} {Failing 1} {Degraded 0} {Progressing 0} {Suspended 0}]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
}

func TestFleetPageListsASyncSetsSyncsTogetherAndLinksThem(t *testing.T) {
	syncs := make([]v1alpha1.Sync, 0, 5)
	for _, s := range []struct{ name, set string }{{"b-web", "web"}, {"a-hand", ""}, {"a-api", "api"}, {"c-web", "web"}, {"z-hand", ""}} {
		sy := v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: s.name}}
		if s.set != "" {
			sy.Labels = map[string]string{v1alpha1.SyncSetLabel: s.set}
		}
		syncs = append(syncs, sy)
	}
	page := fleetPageOf(syncs, fleetFilter{})
	var got []string
	for _, r := range page.Rows {
		got = append(got, r.SyncSet+":"+r.Name)
	}
	want := []string{":a-hand", ":z-hand", "api:a-api", "web:b-web", "web:c-web"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	out := renderFleet(t, page)
	link := `href="/?namespace=platform&amp;label=tether.dev%2fsyncset%3dweb"`
	if !strings.Contains(strings.ToLower(out), link) || !strings.Contains(out, ">SyncSet web</a>") {
		t.Errorf("the fleet page lacks the link to SyncSet web's Syncs (%s):\n%s", link, out)
	}
}

// renderFleet renders the fleet page of page, as the server does.
func renderFleet(t *testing.T, page fleetPage) string {
	t.Helper()
	p, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := p.byName["fleet"].ExecuteTemplate(&out, "layout", page); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestFleetPageNamesTheClusterOfARemoteSync(t *testing.T) {
	home := v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "home"}}
	remote := v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "remote"},
		Spec: v1alpha1.SyncSpec{Destination: v1alpha1.DestinationSpec{Cluster: "prod-eu"}}}
	page := fleetPageOf([]v1alpha1.Sync{home, remote}, fleetFilter{})
	out := renderFleet(t, page)
	if n := strings.Count(out, `data-cluster=`); n != 1 || !strings.Contains(out, ">cluster prod-eu</span>") {
		t.Errorf("the fleet page shows %d cluster tags, want one naming prod-eu for the remote Sync alone:\n%s", n, out)
	}
}

// BenchmarkFleetPageOf1000Syncs renders the fleet page of 1,000 Syncs from
// memory, as the page is rendered from the shared watch's cache: the issue asks
// for it within a second.
func BenchmarkFleetPageOf1000Syncs(b *testing.B) {
	p, err := parsePages()
	if err != nil {
		b.Fatal(err)
	}
	syncs := fleetOf(1000)
	for b.Loop() {
		if err := p.byName["fleet"].ExecuteTemplate(io.Discard, "layout", fleetPageOf(syncs, fleetFilter{})); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSyncPageSaysWhoSignedTheAppliedRevision(t *testing.T) {
	p, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	sy := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "web"}}
	render := func() string {
		var out strings.Builder
		if err := p.byName["sync"].ExecuteTemplate(&out, "layout", syncView{Row: rowOf(sy)}); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if out := render(); strings.Contains(out, "Signed by") {
		t.Errorf("the page of a Sync that verifies nothing shows a signer")
	}
	sy.Status.LastAppliedSigner = "Alice <alice@example.com> (openpgp 0A1B)\n\t"
	if out := render(); !strings.Contains(out, `<dd data-field="signedBy">Alice &lt;alice@example.com&gt; (openpgp 0A1B)</dd>`) {
		t.Errorf("the page does not name the signer, escaped and on one line:\n%s", out)
	}
}
