package ui

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// TestTheTreeShowsWhatTheWorkloadsOwn: under a Deployment of the inventory, the
// ReplicaSet it owns and that ReplicaSet's Pod, each with its health, and under
// its Service the EndpointSlice it owns; a ReplicaSet owned by another
// Deployment is not shown there.
func TestTheTreeShowsWhatTheWorkloadsOwn(t *testing.T) {
	c := admin(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	deploy := apiDeployment(t, c, ns)
	labels := deploy.Spec.Template.Labels
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

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"}, Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}}}
	harness.Must(t, c.Create(t.Context(), svc))
	// What the EndpointSlice controller keeps for the Service (none runs here).
	owned(&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "api-k9q4t"}, AddressType: discoveryv1.AddressTypeIPv4}, svc, "Service")

	st := readyStatus("main@sha1:aaaaaaaaaaaa", "first")
	st.Objects = []v1alpha1.InventoryGroup{
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Names: []string{"api"}},
		{Version: "v1", Kind: "Service", Namespace: ns, Names: []string{"api"}},
	}
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
	if _, svcTree, ok := strings.Cut(tree, `<span class="obj">api</span>`); !ok || !strings.Contains(svcTree, `EndpointSlice <span class="obj">api-k9q4t</span>`) {
		t.Errorf("the tree does not show the Service's EndpointSlice under it:\n%s", tree)
	}
	if strings.Contains(page, "other-1a2b") {
		t.Errorf("the tree shows a ReplicaSet another Deployment owns:\n%s", tree)
	}
}

// apiDeployment creates Deployment ns/api (labels app=api, one pause container)
// and the namespace's default ServiceAccount, which no controller-manager makes
// here and a Pod needs, for tests that then create what the Deployment owns.
func apiDeployment(t *testing.T, c client.Client, ns string) *appsv1.Deployment {
	t.Helper()
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
	return deploy
}
