package ui

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
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
	for _, action := range []string{"suspend", "reconcile"} {
		code, body := b.do(t.Context(), http.MethodPost, "/syncs/"+ns+"/web/"+action, url.Values{csrfField: {token}})
		if code != http.StatusForbidden {
			t.Errorf("%s as viewer: %d, want 403", action, code)
		}
		for _, want := range []string{"<h1>Refused</h1>", "The API server refused to " + action, "forbidden", `User &#34;viewer&#34; cannot patch`} {
			if !strings.Contains(body, want) {
				t.Errorf("%s as viewer: the page lacks %q:\n%s", action, want, body)
			}
		}
	}
	if s := getWeb(t, c, ns); s.Spec.Suspend || s.Annotations[v1alpha1.ReconcileRequestedAnnotation] != "" {
		t.Errorf("the refused actions changed the Sync: suspend %v, annotations %v", s.Spec.Suspend, s.Annotations)
	}
}
