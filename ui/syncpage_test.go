package ui

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
)

func TestSyncPageShowsConditionsTreeAndHistory(t *testing.T) {
	c := admin(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	st := readyStatus("main@sha1:4f2c1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b", "Add the api")
	st.Objects = []v1alpha1.InventoryGroup{
		{Version: "v1", Kind: "Namespace", Names: []string{"web"}},
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Names: []string{"api"}},
	}
	st.Resources = []v1alpha1.ResourceStatus{{
		ObjectRef: v1alpha1.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "api"},
		Sync:      v1alpha1.SyncStatusOutOfSync, Health: v1alpha1.HealthProgressing, Message: "1 of 2 replicas updated",
	}}
	newSync(t, c, ns, "web", nil, st)
	b := startUI(t, controlplane.Shared(t).Config(), "default", true)

	page := b.get("/syncs/" + ns + "/web")
	for _, want := range []string{
		"<td>Ready</td>", "applied main@sha1:4f2c1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b",
		"<li>(cluster-scoped)<ul>", "<li>Deployment.apps<ul>",
		`<span class="obj">api</span> <span class="status" data-value="OutOfSync">OutOfSync</span> <span class="status" data-value="Progressing">Progressing</span>`,
		"1 of 2 replicas updated", "Add the api", "(current)",
		`<ol class="timeline">`, `<span class="status" data-value="Healthy">Healthy</span>`,
		`href="/syncs/` + ns + `/web/graph"`,
		`action="/syncs/` + ns + `/web/reconcile"`, `action="/syncs/` + ns + `/web/suspend"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the Sync page lacks %q:\n%s", want, page)
		}
	}
	if code, _ := b.do(t.Context(), "GET", "/syncs/"+ns+"/missing", nil); code != 404 {
		t.Errorf("a Sync that does not exist: %d, want 404", code)
	}
}

// TestHostileValuesComeOutEscaped: what the cluster and git hold is written into
// the pages as text, never as markup: a commit subject, a condition message, an
// annotation, an Event.
func TestHostileValuesComeOutEscaped(t *testing.T) {
	c := admin(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	const (
		subject    = `<script>alert("subject")</script>`
		message    = `"><img src=x onerror=alert(1)>`
		annotation = `</code><script>alert('pin')</script>`
	)
	st := readyStatus("main@sha1:4f2c1a2b3c4d", subject)
	st.Conditions = append(st.Conditions, metav1.Condition{Type: v1alpha1.StalledCondition, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonRenderFailed, Message: message, ObservedGeneration: 1, LastTransitionTime: metav1.Now()})
	newSync(t, c, ns, "hostile", func(s *v1alpha1.Sync) {
		s.Annotations = map[string]string{v1alpha1.PinRevisionAnnotation: annotation}
	}, st)
	b := startUI(t, controlplane.Shared(t).Config(), "default", true)

	for _, path := range []string{"/?namespace=" + ns, "/syncs/" + ns + "/hostile"} {
		page := b.get(path)
		for _, raw := range []string{"<script>alert", "<img src=x", "</code><script>"} {
			if strings.Contains(page, raw) {
				t.Errorf("%s writes %q as markup:\n%s", path, raw, page)
			}
		}
		for _, escaped := range []string{"&lt;script&gt;alert(&#34;subject&#34;)&lt;/script&gt;", "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;"} {
			if !strings.Contains(page, escaped) {
				t.Errorf("%s lacks the escaped text %q:\n%s", path, escaped, page)
			}
		}
	}
}
