package ui

import (
	"strings"
	"testing"

	"tether.dev/tether/test/controlplane"
)

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
