package ui

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// getWeb reads the Sync web of ns, which the tests act on.
func getWeb(t *testing.T, c client.Client, ns string) *v1alpha1.Sync {
	t.Helper()
	s := &v1alpha1.Sync{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web"}, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAPostWithoutTheCSRFTokenIsRefused(t *testing.T) {
	c := admin(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	newSync(t, c, ns, "web", nil, readyStatus("main@sha1:aaaaaaaaaaaa", "first"))
	b := startUI(t, controlplane.Shared(t).Config(), "default", true)
	token := b.csrf(b.get("/syncs/" + ns + "/web"))
	action := "/syncs/" + ns + "/web/reconcile"

	for name, form := range map[string]url.Values{
		"no token":                  {},
		"a token not the session's": {csrfField: {"x" + token}},
	} {
		t.Run(name, func(t *testing.T) {
			code, body := b.do(t.Context(), http.MethodPost, action, form)
			if code != http.StatusForbidden || !strings.Contains(body, "CSRF") {
				t.Errorf("POST with %s: %d, want 403 naming the CSRF token:\n%s", name, code, body)
			}
			if _, requested := getWeb(t, c, ns).Annotations[v1alpha1.ReconcileRequestedAnnotation]; requested {
				t.Error("the refused POST requested a reconcile")
			}
		})
	}
	t.Run("with the session's token the reconcile is requested", func(t *testing.T) {
		code, _ := b.do(t.Context(), http.MethodPost, action, url.Values{csrfField: {token}})
		if code != http.StatusSeeOther {
			t.Fatalf("POST with the token: %d, want 303 back to the Sync", code)
		}
		if _, requested := getWeb(t, c, ns).Annotations[v1alpha1.ReconcileRequestedAnnotation]; !requested {
			t.Error("no reconcile requested")
		}
		if page := b.get("/syncs/" + ns + "/web?done=reconcile"); !strings.Contains(page, "Reconcile requested") {
			t.Errorf("the page does not say what was done:\n%s", page)
		}
	})
	t.Run("suspend, then resume", func(t *testing.T) {
		for _, step := range []struct {
			action  string
			suspend bool
		}{{"suspend", true}, {"resume", false}} {
			if code, body := b.do(t.Context(), http.MethodPost, "/syncs/"+ns+"/web/"+step.action, url.Values{csrfField: {token}}); code != http.StatusSeeOther {
				t.Fatalf("%s: %d\n%s", step.action, code, body)
			}
			if got := getWeb(t, c, ns).Spec.Suspend; got != step.suspend {
				t.Errorf("after %s: spec.suspend %v", step.action, got)
			}
		}
	})
}

func TestAnActionWithoutRBACIsRefusedAndShownRefused(t *testing.T) {
	c := admin(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	newSync(t, c, ns, "web", nil, readyStatus("main@sha1:aaaaaaaaaaaa", "first"))
	grantSyncReading(t, c, "viewer", ns) // get, list, watch: no patch

	b := startUI(t, as(t, "viewer"), ns, false)
	token := b.csrf(b.get("/syncs/" + ns + "/web"))
	for _, action := range []string{"suspend", "reconcile", "rollback"} {
		code, body := b.do(t.Context(), http.MethodPost, "/syncs/"+ns+"/web/"+action, url.Values{csrfField: {token}, "to": {"main@sha1:aaaaaaaaaaaa"}})
		if code != http.StatusForbidden {
			t.Errorf("%s as viewer: %d, want 403", action, code)
		}
		for _, want := range []string{"<h1>Refused</h1>", "The API server refused to " + action, "forbidden", `User &#34;viewer&#34; cannot patch`} {
			if !strings.Contains(body, want) {
				t.Errorf("%s as viewer: the page lacks %q:\n%s", action, want, body)
			}
		}
	}
	if s := getWeb(t, c, ns); s.Spec.Suspend || s.Annotations[v1alpha1.ReconcileRequestedAnnotation] != "" || s.Annotations[v1alpha1.PinRevisionAnnotation] != "" {
		t.Errorf("the refused actions changed the Sync: suspend %v, annotations %v", s.Spec.Suspend, s.Annotations)
	}
}

// Each action is recorded in an Event on the Sync naming the user the UI acts
// as; a user who may change Syncs but not create Events has the action done all
// the same, with no Event.
func TestAnActionIsRecordedInAnEventNamingTheUser(t *testing.T) {
	c := admin(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	newSync(t, c, ns, "web", nil, readyStatus("main@sha1:aaaaaaaaaaaa", "first"))
	grantSyncReading(t, c, "operator", ns)
	grantSyncPatching(t, c, "operator", ns)

	requested := func() []string {
		events := &corev1.EventList{}
		harness.Must(t, c.List(t.Context(), events, client.InNamespace(ns)))
		var got []string
		for _, e := range events.Items {
			if e.Reason == v1alpha1.ReasonRequestedByUser && e.InvolvedObject.Name == "web" {
				got = append(got, e.Message)
			}
		}
		return got
	}
	act := func(b *browser, action string) {
		t.Helper()
		token := b.csrf(b.get("/syncs/" + ns + "/web"))
		if code, body := b.do(t.Context(), http.MethodPost, "/syncs/"+ns+"/web/"+action, url.Values{csrfField: {token}}); code != http.StatusSeeOther {
			t.Fatalf("%s: %d\n%s", action, code, body)
		}
	}

	act(startUIWith(t, Options{Config: controlplane.Shared(t).Config(), Namespace: ns, User: "admin-alice"}), "suspend")
	if got, want := requested(), []string{"admin-alice asked to suspend the Sync, through tether ui"}; !slices.Equal(got, want) {
		t.Errorf("Events after the admin's suspend: %q, want %q", got, want)
	}
	act(startUIWith(t, Options{Config: as(t, "operator"), Namespace: ns, User: "operator"}), "resume")
	if getWeb(t, c, ns).Spec.Suspend {
		t.Error("the operator's resume was not done")
	}
	if got := requested(); len(got) != 1 {
		t.Errorf("Events after the operator's resume (who may not create Events): %q, want only the admin's", got)
	}
}

// grantSyncPatching lets user patch Syncs in namespace ns (and nothing more:
// no Events), and waits until the API server's authorizer honours it.
func grantSyncPatching(t *testing.T, c client.Client, user, ns string) {
	t.Helper()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "patch-syncs"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"syncs"}, Verbs: []string{"patch"}}},
	}
	harness.Must(t, c.Create(t.Context(), role))
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "patch-syncs-" + user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
	}
	harness.Must(t, c.Create(t.Context(), binding))
	userClient, err := client.New(as(t, user), client.Options{Scheme: testScheme(t)})
	harness.Must(t, err)
	harness.Eventually(t, waitLong, user+" may patch Syncs", func(ctx context.Context) (bool, error) {
		s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
		return true, userClient.Patch(ctx, s, client.RawPatch(types.MergePatchType, []byte(`{}`)), client.DryRunAll)
	})
}

// A rollback from the history table pins the Sync to that entry's commit, as
// tether rollback --to does, and is recorded in an Event naming the user and the
// commit; removing the pin follows the ref again. A suspended Sync is not
// rolled back (409), and a user who may not patch Syncs is refused (403).
func TestARollbackFromTheHistoryPinsTheSync(t *testing.T) {
	c := admin(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	older, current := strings.Repeat("a", 40), strings.Repeat("b", 40)
	st := readyStatus("main@sha1:"+current, "Break it")
	st.History = append(st.History, v1alpha1.HistoryEntry{Revision: "main@sha1:" + older, AppliedAt: metav1.Now(), Health: v1alpha1.HealthHealthy, Message: "Works"})
	newSync(t, c, ns, "web", nil, st)
	b := startUIWith(t, Options{Config: controlplane.Shared(t).Config(), Namespace: ns, User: "alice"})

	page := b.get("/syncs/" + ns + "/web")
	if n := strings.Count(page, `<form class="rollback"`); n != 1 {
		t.Fatalf("%d rollback forms in the history, want one (the older revision's, not the current):\n%s", n, page)
	}
	if !strings.Contains(page, `name="to" value="main@sha1:`+older+`"`) {
		t.Errorf("the rollback form does not name the older revision:\n%s", page)
	}
	token := b.csrf(page)
	post := func(action string, form url.Values) (int, string) {
		form.Set(csrfField, token)
		return b.do(t.Context(), http.MethodPost, "/syncs/"+ns+"/web/"+action, form)
	}
	if code, body := post("rollback", url.Values{"to": {"main@sha1:" + older}}); code != http.StatusSeeOther {
		t.Fatalf("rollback: %d\n%s", code, body)
	}
	if got := getWeb(t, c, ns).Annotations[v1alpha1.PinRevisionAnnotation]; got != older {
		t.Errorf("after the rollback the pin is %q, want %q", got, older)
	}
	if page := b.get("/syncs/" + ns + "/web?done=rollback"); !strings.Contains(page, "Pinned to the revision chosen") || !strings.Contains(page, "/web/unpin") {
		t.Errorf("the page says nothing of the pin, or offers no way to remove it:\n%s", page)
	}
	if code, body := post("unpin", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("unpin: %d\n%s", code, body)
	}
	if _, pinned := getWeb(t, c, ns).Annotations[v1alpha1.PinRevisionAnnotation]; pinned {
		t.Error("the pin is still there after unpin")
	}
	events := &corev1.EventList{}
	harness.Must(t, c.List(t.Context(), events, client.InNamespace(ns)))
	var got []string
	for _, e := range events.Items {
		if e.Reason == v1alpha1.ReasonRequestedByUser {
			got = append(got, e.Message)
		}
	}
	slices.Sort(got)
	want := []string{"alice asked to remove the pin of the Sync, through tether ui", "alice asked to roll back the Sync to " + older + ", through tether ui"}
	if !slices.Equal(got, want) {
		t.Errorf("Events: %q, want %q", got, want)
	}

	for name, tc := range map[string]struct {
		form url.Values
		code int
		says string
	}{
		"no revision":                            {url.Values{}, http.StatusConflict, "names no revision"},
		"a revision not of the history":          {url.Values{"to": {"cccccccc"}}, http.StatusConflict, "names no revision of its history"},
		"a Sync not pinned has no pin to remove": {nil, http.StatusConflict, "it is not pinned"},
	} {
		action := "rollback"
		if tc.form == nil {
			action, tc.form = "unpin", url.Values{}
		}
		if code, body := post(action, tc.form); code != tc.code || !strings.Contains(body, tc.says) {
			t.Errorf("%s: %d, want %d saying %q:\n%s", name, code, tc.code, tc.says, body)
		}
	}
	s := getWeb(t, c, ns)
	s.Spec.Suspend = true
	harness.Must(t, c.Update(t.Context(), s))
	if code, body := post("rollback", url.Values{"to": {"main@sha1:" + older}}); code != http.StatusConflict || !strings.Contains(body, "it is suspended: resume it first") {
		t.Errorf("rollback of a suspended Sync: %d, want 409 saying to resume it:\n%s", code, body)
	}
	if _, pinned := getWeb(t, c, ns).Annotations[v1alpha1.PinRevisionAnnotation]; pinned {
		t.Error("a refused rollback pinned the Sync")
	}
}
