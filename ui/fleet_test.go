package ui

import (
	"strings"
	"testing"

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
		if !strings.Contains(page, `<span class="n">`) || !strings.Contains(page, "Suspended</li>") {
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

func TestAUserOfOneNamespaceSeesOnlyIt(t *testing.T) {
	c := admin(t)
	cfg := controlplane.Shared(t).Config()
	mine, theirs := controlplane.NewNamespace(t, cfg), controlplane.NewNamespace(t, cfg)
	newSync(t, c, mine, "mine", nil, readyStatus("main@sha1:aaaaaaaaaaaa", "mine"))
	newSync(t, c, theirs, "theirs", nil, readyStatus("main@sha1:bbbbbbbbbbbb", "theirs"))
	grantSyncReading(t, c, "alice", mine)

	b := startUI(t, as(t, "alice"), mine, true)
	page := b.get("/")
	if !strings.Contains(page, `data-key="`+mine+`/mine"`) {
		t.Errorf("alice does not see the Sync of her namespace:\n%s", page)
	}
	if strings.Contains(page, theirs) {
		t.Errorf("alice sees namespace %s, which she may not list:\n%s", theirs, page)
	}
	if !strings.Contains(page, "you may not list Syncs in every namespace") {
		t.Errorf("the page does not say why it shows one namespace:\n%s", page)
	}
	if code, _ := b.do(t.Context(), "GET", "/syncs/"+theirs+"/theirs", nil); code != 403 {
		t.Errorf("alice opening a Sync of %s: %d, want 403 (the API server's refusal)", theirs, code)
	}
}

func TestAUserWhoMayListNoSyncsGetsAnError(t *testing.T) {
	admin(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	_, err := New(t.Context(), Options{Config: as(t, "nobody"), Scheme: testScheme(t), Namespace: ns, AllNamespaces: true})
	if err == nil || !strings.Contains(err.Error(), "listing Syncs in namespace "+ns) || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("New as a user who may list nothing: %v; want the refusal, naming the namespace", err)
	}
}
