package ui

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

func TestSyncPageShowsConditionsTreeAndHistory(t *testing.T) {
	c := admin(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	st := readyStatus("main@sha1:4f2c1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b", "Add the api")
	st.Inventory = []string{"_web__Namespace_v1", "web_api_apps_Deployment_v1"}
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

// TestTheTreeShowsWhatTheWorkloadsOwn: under a Deployment of the inventory, the
// ReplicaSet it owns and that ReplicaSet's Pod, each with its health; a
// ReplicaSet owned by another Deployment is not shown there.
func TestTheTreeShowsWhatTheWorkloadsOwn(t *testing.T) {
	c := admin(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	labels := map[string]string{"app": "api"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
	harness.Must(t, c.Create(t.Context(), deploy))
	// No controller-manager makes the namespace's default account, which a Pod needs.
	harness.Must(t, c.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}))
	owned := func(obj client.Object, owner client.Object, kind string) {
		t.Helper()
		gvk, err := c.GroupVersionKindFor(owner)
		harness.Must(t, err)
		obj.SetNamespace(ns)
		obj.SetLabels(labels)
		obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: gvk.GroupVersion().String(), Kind: kind, Name: owner.GetName(), UID: owner.GetUID()}})
		harness.Must(t, c.Create(t.Context(), obj))
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "api-5d8f"}, Spec: appsv1.ReplicaSetSpec{Selector: deploy.Spec.Selector, Template: deploy.Spec.Template}}
	owned(rs, deploy, "Deployment")
	owned(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api-5d8f-x7k2p"}, Spec: deploy.Spec.Template.Spec}, rs, "ReplicaSet")
	other := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "other-1a2b"}, Spec: rs.Spec}
	owned(other, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "other", UID: "0"}}, "Deployment")

	st := readyStatus("main@sha1:aaaaaaaaaaaa", "first")
	st.Inventory = []string{ns + "_api_apps_Deployment_v1"}
	newSync(t, c, ns, "web", nil, st)
	b := startUI(t, controlplane.Shared(t).Config(), "default", true)

	page := b.get("/syncs/" + ns + "/web")
	_, tree, found := strings.Cut(page, `<span class="obj">api</span>`)
	tree, _, _ = strings.Cut(tree, "</section>")
	if !found {
		t.Fatalf("the tree does not show the Deployment api:\n%s", page)
	}
	rsAt := strings.Index(tree, `ReplicaSet <span class="obj">api-5d8f</span>`)
	podAt := strings.Index(tree, `Pod <span class="obj">api-5d8f-x7k2p</span> <span class="status" data-value="Progressing">Progressing</span>`)
	if rsAt < 0 || podAt < rsAt {
		t.Errorf("the tree does not show the ReplicaSet under the Deployment and its Pod under it:\n%s", tree)
	}
	if strings.Contains(page, "other-1a2b") {
		t.Errorf("the tree shows a ReplicaSet another Deployment owns:\n%s", tree)
	}
}
