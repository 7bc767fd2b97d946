package ui

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// shippedUserRoles are the ClusterRoles of the generated deploy/ui.yaml, by name.
func shippedUserRoles(t *testing.T) map[string]*rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile("../deploy/ui.yaml")
	harness.Must(t, err)
	roles := map[string]*rbacv1.ClusterRole{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		if !strings.Contains(doc, "\nkind: ClusterRole\n") {
			continue
		}
		role := &rbacv1.ClusterRole{}
		harness.Must(t, sigsyaml.UnmarshalStrict([]byte(doc), role))
		roles[role.Name] = role
	}
	return roles
}

// applyShippedRole creates (or overwrites) the ClusterRole as shipped, until the
// test ends.
func applyShippedRole(t *testing.T, c client.Client, shipped *rbacv1.ClusterRole) {
	t.Helper()
	role := shipped.DeepCopy()
	err := c.Create(t.Context(), role)
	if apierrors.IsAlreadyExists(err) {
		current := &rbacv1.ClusterRole{}
		harness.Must(t, c.Get(t.Context(), client.ObjectKeyFromObject(role), current))
		current.Rules, current.AggregationRule = shipped.Rules, shipped.AggregationRule
		err = c.Update(t.Context(), current)
	}
	harness.Must(t, err)
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(t.Context()), role) })
}

// bindInNamespace binds ClusterRole role to ServiceAccount ns/account with a
// RoleBinding in ns, and waits until the API server's authorizer lets token list
// Syncs there.
func bindInNamespace(t *testing.T, c client.Client, ns, account, role, token string) {
	t.Helper()
	harness.Must(t, c.Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: account + "-" + role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: account}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
	}))
	cfg := rest.AnonymousClientConfig(controlplane.Shared(t).Config())
	cfg.BearerToken = token
	userClient, err := client.New(cfg, client.Options{Scheme: testScheme(t)})
	harness.Must(t, err)
	harness.Eventually(t, waitLong, account+" may list Syncs in "+ns, func(ctx context.Context) (bool, error) {
		return true, userClient.List(ctx, &v1alpha1.SyncList{}, client.InNamespace(ns))
	})
}

// aWorkloadSync makes the Sync web of ns, whose inventory holds the Deployment
// api; the Deployment owns a ReplicaSet that owns a Pod, and an Event names the
// Sync. It returns the Event's message.
func aWorkloadSync(t *testing.T, c client.Client, ns string) string {
	t.Helper()
	deploy := apiDeployment(t, c, ns)
	labels := deploy.Spec.Template.Labels
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-5d8f", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: deploy.Name, UID: deploy.UID}}},
		Spec: appsv1.ReplicaSetSpec{Selector: deploy.Spec.Selector, Template: deploy.Spec.Template},
	}
	harness.Must(t, c.Create(t.Context(), rs))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-5d8f-x7k2p", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID}}},
		Spec: deploy.Spec.Template.Spec,
	}
	harness.Must(t, c.Create(t.Context(), pod))

	st := readyStatus("main@sha1:aaaaaaaaaaaa", "first")
	st.Objects = []v1alpha1.InventoryGroup{{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Names: []string{"api"}}}
	sy := newSync(t, c, ns, "web", nil, st)
	const message = "applied main@sha1:aaaaaaaaaaaa: 1 object"
	now := metav1.Now()
	harness.Must(t, c.Create(t.Context(), &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, GenerateName: "web."},
		InvolvedObject: corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Sync", Namespace: ns, Name: "web", UID: sy.UID},
		Reason:         v1alpha1.ReasonSucceeded, Message: message, Type: corev1.EventTypeNormal,
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}))
	return message
}

// TestTheShippedUserRolesLetAViewerSeeAndAnOperatorAct applies the ClusterRoles
// of deploy/ui.yaml as shipped, binds tether-ui-viewer to one ServiceAccount and
// tether-ui-operator to another in one namespace, and signs both in to a UI in
// cluster mode: the viewer sees the fleet and the Sync's whole page (its tree down
// to the Pod, its Events) with nothing left out as forbidden, and is refused a
// suspend; the operator's suspend is done and recorded in an Event naming them.
// Taking any rule the pages or the action need out of a role fails it.
func TestTheShippedUserRolesLetAViewerSeeAndAnOperatorAct(t *testing.T) {
	c := admin(t)
	roles := shippedUserRoles(t)
	for _, name := range []string{"tether-ui-viewer", "tether-ui-operator"} {
		if roles[name] == nil {
			t.Fatalf("deploy/ui.yaml ships no ClusterRole %s (it has %d)", name, len(roles))
		}
		applyShippedRole(t, c, roles[name])
	}
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	eventMessage := aWorkloadSync(t, c, ns)
	viewerToken, _ := serviceAccountToken(t, ns, "viewer")
	operatorToken, operator := serviceAccountToken(t, ns, "operator")
	bindInNamespace(t, c, ns, "viewer", "tether-ui-viewer", viewerToken)
	bindInNamespace(t, c, ns, "operator", "tether-ui-operator", operatorToken)
	base, _ := startClusterUI(t)

	session := func(token string) *browser {
		t.Helper()
		code, body, cookie := signIn(t, base, token, ns)
		if code != http.StatusSeeOther || cookie == nil {
			t.Fatalf("sign-in: %d\n%s", code, body)
		}
		return browserWith(t, base, cookie)
	}
	suspend := func(b *browser) (int, string) {
		t.Helper()
		token := b.csrf(b.get("/syncs/" + ns + "/web"))
		return b.do(t.Context(), http.MethodPost, "/syncs/"+ns+"/web/suspend", url.Values{csrfField: {token}})
	}

	sees := func(t *testing.T, who string, b *browser) {
		t.Helper()
		if fleet := b.get("/"); !strings.Contains(fleet, `href="/syncs/`+ns+`/web"`) || strings.Contains(fleet, "Not shown") {
			t.Errorf("the %s's fleet lacks the Sync or leaves something out:\n%s", who, fleet)
		}
		page := b.get("/syncs/" + ns + "/web")
		for _, want := range []string{
			`ReplicaSet <span class="obj">api-5d8f</span>`, `Pod <span class="obj">api-5d8f-x7k2p</span>`, eventMessage,
		} {
			if !strings.Contains(page, want) {
				t.Errorf("the %s's Sync page lacks %q:\n%s", who, want, page)
			}
		}
		for _, gap := range []string{"Not shown", "forbidden"} {
			if strings.Contains(page, gap) {
				t.Errorf("the %s's Sync page says %q:\n%s", who, gap, page)
			}
		}
		// The Pod's panel reads it with a get, and links its logs.
		panel := b.get("/syncs/" + ns + "/web/object?key=" + url.QueryEscape("/Pod/"+ns+"/api-5d8f-x7k2p"))
		if !strings.Contains(panel, `id="logs-link"`) || !strings.Contains(panel, "name: api-5d8f-x7k2p") {
			t.Errorf("the %s's panel of the Pod lacks its manifest or its logs' link:\n%s", who, panel)
		}
	}

	viewer, operatorBrowser := session(viewerToken), session(operatorToken)
	t.Run("each sees the fleet and the Sync's page, nothing forbidden", func(t *testing.T) {
		sees(t, "viewer", viewer)
		sees(t, "operator", operatorBrowser)
	})
	// The live fleet is a watch of Syncs made with the user's token. A watch
	// refused leaves the UI's informer listing again and again, which no page
	// shows: so the test makes that watch with each token itself.
	t.Run("each may watch the Syncs of the namespace", func(t *testing.T) {
		for who, token := range map[string]string{"viewer": viewerToken, "operator": operatorToken} {
			cfg := rest.AnonymousClientConfig(controlplane.Shared(t).Config())
			cfg.BearerToken = token
			wc, err := client.NewWithWatch(cfg, client.Options{Scheme: testScheme(t)})
			harness.Must(t, err)
			w, err := wc.Watch(t.Context(), &v1alpha1.SyncList{}, client.InNamespace(ns))
			if err != nil {
				t.Errorf("the %s's watch of Syncs: %v", who, err)
				continue
			}
			w.Stop()
		}
	})
	// The Pod is on no node here: the API server, having authorized pods/log,
	// answers with an empty log, which ends at once.
	t.Run("each may follow a Pod's log", func(t *testing.T) {
		logs := "/syncs/" + ns + "/web/logs?key=" + url.QueryEscape("/Pod/"+ns+"/api-5d8f-x7k2p")
		for who, b := range map[string]*browser{"viewer": viewer, "operator": operatorBrowser} {
			if page := b.get(logs); !strings.Contains(page, `<h2 id="log-title">Container app</h2>`) {
				t.Errorf("the %s's logs page lacks the container app:\n%s", who, page)
			}
			stream := openLogStream(t, b, strings.Replace(logs, "/logs?", "/logs/stream?", 1)+"&container=app")
			awaitEvent(t, stream, "end", "the log's end", func(data []byte) bool {
				return strings.Contains(string(data), "The log ended")
			})
		}
	})
	t.Run("the viewer's suspend is refused", func(t *testing.T) {
		code, body := suspend(viewer)
		if code != http.StatusForbidden || !strings.Contains(body, "<h1>Refused</h1>") {
			t.Errorf("the viewer's suspend: %d, want 403 Refused:\n%s", code, body)
		}
		if getWeb(t, c, ns).Spec.Suspend {
			t.Error("the viewer suspended the Sync")
		}
	})
	t.Run("the operator's suspend is done and recorded", func(t *testing.T) {
		if code, body := suspend(operatorBrowser); code != http.StatusSeeOther {
			t.Fatalf("the operator's suspend: %d, want 303:\n%s", code, body)
		}
		if !getWeb(t, c, ns).Spec.Suspend {
			t.Error("the operator's suspend was not done")
		}
		events := &corev1.EventList{}
		harness.Must(t, c.List(t.Context(), events, client.InNamespace(ns)))
		want := operator + " asked to suspend the Sync, through tether ui"
		for _, e := range events.Items {
			if e.Reason == v1alpha1.ReasonRequestedByUser && e.Message == want {
				return
			}
		}
		t.Errorf("no Event %q among %d", want, len(events.Items))
	})
}

// TestTheExampleDiffRoleLetsAViewerDiff binds tether-ui-viewer as shipped and
// deploy/ui's example Role tether-ui-diff (its Secret names made the fixture's)
// in one namespace to a user: the diff page shows that user each OutOfSync
// object's difference, none failed, an object the cluster lacks included (a
// dry-run create: the Role's create is needed for it).
func TestTheExampleDiffRoleLetsAViewerDiff(t *testing.T) {
	c := admin(t)
	ns, render := diffFixture(t, c)
	applyShippedRole(t, c, shippedUserRoles(t)["tether-ui-viewer"])
	data, err := os.ReadFile("../deploy/ui/diff_role.example.yaml")
	harness.Must(t, err)
	role := &rbacv1.Role{}
	harness.Must(t, sigsyaml.UnmarshalStrict(data, role))
	role.Namespace = ns
	for i, r := range role.Rules {
		if slices.Contains(r.Resources, "secrets") {
			role.Rules[i].ResourceNames = []string{"creds"}
		}
	}
	harness.Must(t, c.Create(t.Context(), role))
	const user = "differ"
	for kind, name := range map[string]string{"ClusterRole": "tether-ui-viewer", "Role": role.Name} {
		harness.Must(t, c.Create(t.Context(), &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user + "-" + name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name},
		}))
	}
	userClient, err := client.New(as(t, user), client.Options{Scheme: testScheme(t)})
	harness.Must(t, err)
	harness.Eventually(t, waitLong, user+" may list Syncs and read the ConfigMap web", func(ctx context.Context) (bool, error) {
		if err := userClient.List(ctx, &v1alpha1.SyncList{}, client.InNamespace(ns)); err != nil {
			return false, err
		}
		return true, userClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &corev1.ConfigMap{})
	})
	// One more OutOfSync object, which git declares and the cluster lacks: its dry
	// run is a create.
	sy := &v1alpha1.Sync{}
	harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "app"}, sy))
	fresh := v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "fresh"}
	plan.SetInventory(&sy.Status, append(plan.Inventory(sy.Status), fresh))
	sy.Status.Resources = append(sy.Status.Resources, v1alpha1.ResourceStatus{ObjectRef: fresh, Sync: v1alpha1.SyncStatusOutOfSync, Health: v1alpha1.HealthMissing})
	harness.Must(t, c.Status().Update(t.Context(), sy))
	withFresh := func(ctx context.Context, uc client.Client, cfg *rest.Config, s *v1alpha1.Sync) ([]*unstructured.Unstructured, error) {
		objs, err := render(ctx, uc, cfg, s)
		return append(objs, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "fresh"}, "data": map[string]any{"colour": "green"}}}), err
	}
	b := startUIWith(t, Options{Config: as(t, user), Namespace: ns, Render: withFresh})

	diff := b.get("/syncs/" + ns + "/app/diff")
	for _, want := range []string{
		`data-object="Secret/` + ns + `/creds"`, `<span class="line add">&#43;  password: &#39;*** (changed)&#39;</span>`,
		`data-object="ConfigMap/` + ns + `/web"`, `<span class="line add">&#43;  colour: green</span>`,
		`data-object="ConfigMap/` + ns + `/fresh"`, `data-value="missing">missing</span>`,
	} {
		if !strings.Contains(diff, want) {
			t.Errorf("the diff page lacks %q:\n%s", want, diff)
		}
	}
	if strings.Contains(diff, `data-value="failed"`) {
		t.Errorf("a dry run failed for the user with the example Role:\n%s", diff)
	}
}
