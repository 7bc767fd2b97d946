package browser

import (
	"context"
	"fmt"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// TestAnActionWithoutRightsIsShownRefused signs in as a user who may read Syncs
// but not change them, presses Suspend (with the keyboard: focus, Enter), and
// reads the API server's refusal on the page it leads to; the Sync stays as it
// was.
func TestAnActionWithoutRightsIsShownRefused(t *testing.T) {
	needFullSet(t)
	c := newClient(t)
	ns := newNamespace(t, c, "shop")
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "shop")
	repo.Commit(t, map[string]string{"web/config.yaml": configMap("web-config", "hello")}, "Greet")
	startAgent(t)
	web := newSync(t, c, ns, "web", repo, "web")
	waitForSync(t, c, web, "is Ready", isReady)
	viewer := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "viewer"}
	grant(t, c, viewer, ns, readSyncs)
	kubeconfig := controlplane.Shared(t).KubeconfigPath()
	waitUntilAllowed(t, kubeconfig, "viewer", ns)

	tb := signIn(t, startUI(t, kubeconfig, "--as", "viewer", "-n", ns))
	if got := tb.press(`a[href="/syncs/` + ns + `/web"]`); got != 200 {
		t.Fatalf("the Sync's link led to a page of status %d", got)
	}
	if got := tb.press(`form[action$="/suspend"] button`); got != 403 {
		t.Errorf("Suspend answered %d, want 403", got)
	}
	if got := tb.text("h1"); got != "Refused" {
		t.Errorf("the page after Suspend says %q, want Refused", got)
	}
	if got := tb.text(".message"); !strings.Contains(got, `User "viewer" cannot patch`) {
		t.Errorf("the refusal %q does not quote the API server's", got)
	}
	tb.accessible("the refusal")
	tb.screenshot("refused", 1100)
	got := &v1alpha1.Sync{}
	harness.Must(t, c.Get(t.Context(), client.ObjectKeyFromObject(web), got))
	if got.Spec.Suspend {
		t.Error("the Sync was suspended by a user who may not")
	}
	if code := tb.press(`a[href="/syncs/` + ns + `/web"]`); code != 200 {
		t.Errorf("the link back led to a page of status %d", code)
	}
}

// TestAUserOfOneNamespaceSeesOnlyIt signs in with the kubeconfig of a
// ServiceAccount that may list Syncs in its own namespace only: the fleet shows
// that namespace's Sync and says why the others are not shown, and the page of a
// Sync elsewhere is refused.
func TestAUserOfOneNamespaceSeesOnlyIt(t *testing.T) {
	needFullSet(t)
	c := newClient(t)
	mine, theirs := newNamespace(t, c, "team-a"), newNamespace(t, c, "team-b")
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "teams")
	repo.Commit(t, map[string]string{"app/config.yaml": configMap("app-config", "hello")}, "Greet")
	newSync(t, c, mine, "app", repo, "app")
	newSync(t, c, theirs, "app", repo, "app")
	kubeconfig := serviceAccountKubeconfig(t, c, mine, "alice")
	grant(t, c, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: mine, Name: "alice"}, mine, readSyncs)
	waitUntilAllowed(t, kubeconfig, "", mine)

	url := startUI(t, kubeconfig)
	tb := signIn(t, url)
	keys := eval[[]string](tb, `Array.from(document.querySelectorAll('tr[data-key]')).map(tr => tr.getAttribute('data-key'))`)
	if len(keys) != 1 || keys[0] != mine+"/app" {
		t.Errorf("the fleet lists %q, want only %s/app", keys, mine)
	}
	if got := tb.text("p.note"); !strings.Contains(got, "Showing namespace "+mine+" only") || !strings.Contains(got, "you may not list Syncs in every namespace") {
		t.Errorf("the fleet's note %q does not say why it shows one namespace", got)
	}
	tb.accessible("the fleet of one namespace")
	tb.screenshot("fleet-one-namespace", 1100)

	tb.open(fmt.Sprintf("%s/syncs/%s/app", base(t, url), theirs))
	if body := eval[string](tb, `document.body.innerText`); !strings.Contains(body, "forbidden") {
		t.Errorf("the page of a Sync in %s does not say it is forbidden:\n%s", theirs, body)
	}
	tb.accessible("the forbidden Sync's page")
	tb.screenshot("sync-forbidden", 1100)
}

// waitUntilAllowed waits until the API server's authorizer lets the kubeconfig's
// user (impersonating as, unless empty) list Syncs in ns: it learns of a binding
// from its own watch, and the UI refuses to start for a user who may list none.
func waitUntilAllowed(t *testing.T, kubeconfig, as, ns string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	harness.Must(t, err)
	cfg.Impersonate.UserName = as
	user, err := client.New(cfg, client.Options{Scheme: newClient(t).Scheme()})
	harness.Must(t, err)
	harness.Eventually(t, waitLong, "the user may list Syncs in "+ns, func(ctx context.Context) (bool, error) {
		return true, user.List(ctx, &v1alpha1.SyncList{}, client.InNamespace(ns))
	})
}
