package ui

import (
	"context"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
)

// Two commits of a history, and what each renders: the older a ConfigMap
// "web" blue, a Secret and a ConfigMap "gone"; the newer "web" green, the
// Secret with another value, "new" added and "gone" removed.
const (
	olderCommit = "1111111111111111111111111111111111111111"
	newerCommit = "2222222222222222222222222222222222222222"
	olderSecret = "older-password-1234"
	newerSecret = "newer-password-5678"
)

func renderAtCommit(t *testing.T) Renderer {
	return func(_ context.Context, _ client.Client, _ *rest.Config, sy *v1alpha1.Sync) ([]*unstructured.Unstructured, error) {
		cm := func(name, colour string) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": name}, "data": map[string]any{"colour": colour}}}
		}
		secret := func(value string) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "creds"},
				"data": map[string]any{"password": base64.StdEncoding.EncodeToString([]byte(value))}}}
		}
		switch sy.Spec.Source.Ref.Commit {
		case olderCommit:
			return []*unstructured.Unstructured{cm("web", "blue"), cm("same", "grey"), cm("gone", "red"), secret(olderSecret)}, nil
		case newerCommit:
			return []*unstructured.Unstructured{cm("web", "green"), cm("same", "grey"), cm("new", "white"), secret(newerSecret)}, nil
		}
		t.Errorf("rendering Sync %s at ref %+v, want one of the history's commits", sy.Name, sy.Spec.Source.Ref)
		return nil, nil
	}
}

// historyOfTwo is a status whose history holds the newer commit, Healthy 42
// seconds after it was applied, then the older, by their authors.
func historyOfTwo() v1alpha1.SyncStatus {
	st := readyStatus("main@sha1:"+newerCommit, "Paint it green")
	applied := metav1.NewTime(st.History[0].AppliedAt.Add(-time.Hour))
	healthy := metav1.NewTime(st.History[0].AppliedAt.Add(42 * time.Second))
	st.History[0].Author, st.History[0].HealthyAt = "Grace Hopper", &healthy
	st.History = append(st.History, v1alpha1.HistoryEntry{Revision: "main@sha1:" + olderCommit, AppliedAt: applied, Health: v1alpha1.HealthDegraded, Message: "Paint it blue", Author: "Ada Lovelace"})
	return st
}

func TestTheTimelineShowsAuthorsHealthAndCompare(t *testing.T) {
	c := admin(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	newSync(t, c, ns, "app", nil, historyOfTwo())
	b := startUIWith(t, Options{Config: controlplane.Shared(t).Config(), Namespace: "default", AllNamespaces: true, Render: renderAtCommit(t)})

	page := b.get("/syncs/" + ns + "/app")
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	for _, want := range []string{
		`<span class="author">by Grace Hopper</span>`, `<span class="author">by Ada Lovelace</span>`,
		`data-value="Healthy">Healthy after 42s</span>`, `data-value="Degraded">never Healthy while applied: reached Degraded</span>`,
		`<form class="compare" method="get" action="/syncs/` + ns + `/app/compare">`,
		`<option value="main@sha1:` + olderCommit + `" selected>main@1111111 Paint it blue</option>`,
		`href="` + strings.ReplaceAll(comparePath(key, "main@sha1:"+olderCommit, "main@sha1:"+newerCommit), "&", "&amp;") + `"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the Sync page lacks %q:\n%s", want, page)
		}
	}
}

func TestComparingTwoRevisionsShowsWhatChangedSecretsMasked(t *testing.T) {
	c := admin(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	newSync(t, c, ns, "app", nil, historyOfTwo())
	b := startUIWith(t, Options{Config: controlplane.Shared(t).Config(), Namespace: "default", AllNamespaces: true, Render: renderAtCommit(t)})
	key := client.ObjectKey{Namespace: ns, Name: "app"}

	page := b.get(comparePath(key, "main@sha1:"+olderCommit, newerCommit))
	for _, want := range []string{
		`<code data-field="from">main@1111111</code>`, `<code data-field="to">main@2222222</code>`, "by Ada Lovelace",
		`data-object="ConfigMap/web"`, `data-value="changed">changed</span>`,
		`<span class="line del">-  colour: blue</span>`, `<span class="line add">&#43;  colour: green</span>`,
		`data-object="ConfigMap/new"`, `data-value="added">added</span>`,
		`data-object="ConfigMap/gone"`, `data-value="removed">removed</span>`,
		`data-object="Secret/creds"`, `*** (changed)`,
		"1 other objects are rendered alike by both.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the compare page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, `data-object="ConfigMap/same"`) {
		t.Errorf("the compare page shows an object both render alike:\n%s", page)
	}
	for _, secret := range []string{olderSecret, newerSecret} {
		for _, form := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))} {
			if strings.Contains(page, form) {
				t.Errorf("the compare page holds the Secret's value %q", form)
			}
		}
	}

	for name, query := range map[string]url.Values{
		"a commit not in the history": {"from": {"main@sha1:" + strings.Repeat("3", 40)}, "to": {newerCommit}},
		"no revision":                 {"to": {newerCommit}},
	} {
		if code, _ := b.do(t.Context(), "GET", "/syncs/"+ns+"/app/compare?"+query.Encode(), nil); code != 404 {
			t.Errorf("%s: %d, want 404", name, code)
		}
	}
}

func TestReachedSaysTheHealthAndHowLongItTook(t *testing.T) {
	applied := metav1.NewTime(time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC))
	healthy := metav1.NewTime(applied.Add(3*time.Minute + 10*time.Second))
	for _, tc := range []struct {
		name    string
		e       v1alpha1.HistoryEntry
		current bool
		want    string
	}{
		{"Healthy, with the time it took", v1alpha1.HistoryEntry{AppliedAt: applied, Health: v1alpha1.HealthHealthy, HealthyAt: &healthy}, false, "Healthy after 3m10s"},
		{"Healthy before the agent recorded when", v1alpha1.HistoryEntry{AppliedAt: applied, Health: v1alpha1.HealthHealthy}, false, "Healthy"},
		{"the current one, on its way", v1alpha1.HistoryEntry{AppliedAt: applied, Health: v1alpha1.HealthProgressing}, true, "not Healthy yet: Progressing"},
		{"an earlier one that never was", v1alpha1.HistoryEntry{AppliedAt: applied, Health: v1alpha1.HealthDegraded}, false, "never Healthy while applied: reached Degraded"},
		{"no health recorded", v1alpha1.HistoryEntry{AppliedAt: applied}, true, "not Healthy yet: -"},
	} {
		if got := reachedOf(tc.e, tc.current); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
