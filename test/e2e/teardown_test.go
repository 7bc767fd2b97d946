package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// TestATenantNamespaceDeletedUnderTheNamespacedInstallFinishes installs
// deploy/overlays/namespaced as shipped, with one more tenant laid out as
// tenants.yaml lays out team-a, and runs the real agent with its ServiceAccount's
// token. Deleting the tenant's namespace deletes its Syncs, its account and the
// RoleBindings that give the agent its rights there, in no order anyone can count
// on. The test control plane runs no namespace controller, so the test plays it in
// the worst order: every RoleBinding and the account first (before the namespace is
// even marked for deletion), then the Sync. The Sync still lets go, the namespace
// could finish, and a Warning Event that outlives the namespace says so.
func TestATenantNamespaceDeletedUnderTheNamespacedInstallFinishes(t *testing.T) {
	c := newClient(t)
	tenantNamespaces(t, c)
	in := applyInstall(t, "namespaced.yaml")
	cfg := controlplane.Shared(t).Config()
	tenant := controlplane.NewNamespace(t, cfg)
	bindings := in.addTenant(t, c, teamA, tenant)
	git := gitserver.Start(t, gitserver.Options{Username: gitUser, Password: gitPassword})
	createSecret(t, c, tenant, "git-credentials")
	repo := git.CreateRepo(t, "leaving")
	first := repo.Commit(t, map[string]string{"web/config.yaml": fmt.Sprintf(appConfig, "hello")}, "web")
	aud := startAuditor(t)
	startAgentWith(t, agentKubeconfig(t, aud), in.agentArgsFor(t, tenant)...)
	web := tenantSync(tenant, "web", repo.URL(), "web")
	create(t, c, web)
	waitForSync(t, c, web, "Ready at the first commit", func(s *v1alpha1.Sync) bool {
		return s.Status.LastAppliedRevision == "main@sha1:"+first && isReady(s)
	})

	for _, obj := range bindings {
		harness.Must(t, client.IgnoreNotFound(c.Delete(t.Context(), obj)))
	}
	waitAgentMayNot(t, tenant, "list", "syncs", "tether.dev")
	waitAgentMayNot(t, tenant, "impersonate", "serviceaccounts", "")
	harness.Must(t, c.Delete(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant}}))

	t.Run("the Sync lets go once its namespace took the agent's rights there", func(t *testing.T) {
		harness.Must(t, c.Delete(t.Context(), web))
		waitGone(t, c, web)
	})
	t.Run("a Warning Event in the agent's namespace, which outlives the tenant's, says what was left", func(t *testing.T) {
		// The API server refuses new Events in a terminating namespace: one about the
		// Sync would never be seen, and would go with the namespace anyway.
		e := waitEventIn(t, c, agentNamespace, v1alpha1.ReasonObjectsLeftBehind, "Sync "+tenant+"/web: ")
		if e.Type != corev1.EventTypeWarning || e.InvolvedObject.Kind != "Lease" {
			t.Errorf("the Event is a %s about %s %s; want a Warning about the agent's Lease", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name)
		}
		for _, want := range []string{"Namespace " + tenant + " is being deleted", "nothing outside the namespace was left"} {
			if !strings.Contains(e.Message, want) {
				t.Errorf("the Event does not say %q: %s", want, e.Message)
			}
		}
	})
	t.Run("nothing was deleted with the agent's own rights", func(t *testing.T) {
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: tenant, Name: "web-config"}, &corev1.ConfigMap{}); err != nil {
			t.Errorf("ConfigMap %s/web-config, left to the namespace's deletion: %v", tenant, err)
		}
		if anyRequest(aud.requests(), func(r apiRequest) bool { return r.as == "" && r.verb == "delete" }) {
			t.Error("the agent deleted something as itself")
		}
	})
	t.Run("the agent's right to patch Syncs everywhere changes no Sync's spec", func(t *testing.T) {
		elsewhere := controlplane.NewNamespace(t, cfg)
		other := tenantSync(elsewhere, "other", repo.URL(), "web")
		other.Finalizers = []string{v1alpha1.Finalizer}
		create(t, c, other)
		asAgent := agentClient(t)
		waitPolicyInForce(t, asAgent, other)
		for what, patch := range map[string]string{
			"its spec":            `{"spec":{"source":{"path":"elsewhere"}}}`,
			"its labels":          `{"metadata":{"labels":{"owned":"yes"}}}`,
			"a rollback pin":      `{"metadata":{"annotations":{"tether.dev/pin-revision":"main@sha1:0000000000000000000000000000000000000000"}}}`,
			"its owners":          `{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"gone","uid":"6a0e6c2a-0000-4000-8000-000000000000"}]}}`,
			"another's finalizer": `{"metadata":{"finalizers":["tether.dev/finalizer","someone.else/finalizer"]}}`,
		} {
			err := asAgent.Patch(t.Context(), other.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)))
			if err == nil || !strings.Contains(err.Error(), agentPolicy) {
				t.Errorf("the agent changing %s of a Sync in %s: %v; want it refused by the policy", what, elsewhere, err)
			}
		}
		// What the right is for: the Sync, being deleted, is let go.
		harness.Must(t, c.Delete(t.Context(), other))
		err := asAgent.Patch(t.Context(), other.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		if err != nil {
			t.Errorf("the agent taking its finalizer off: %v", err)
		}
		waitGone(t, c, other)
	})
}

// waitEventIn waits for an Event of reason in namespace ns whose message starts
// with prefix, and returns it.
func waitEventIn(t *testing.T, c client.Client, ns, reason, prefix string) corev1.Event {
	t.Helper()
	var found corev1.Event
	harness.Eventually(t, waitTimeout, "an Event "+reason+" in "+ns+" saying "+prefix, func(ctx context.Context) (bool, error) {
		events := &corev1.EventList{}
		if err := c.List(ctx, events, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == reason && strings.HasPrefix(e.Message, prefix) {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

// agentPolicy is the ValidatingAdmissionPolicy of the namespaced install that
// keeps the agent's own changes to a Sync to its finalizer and the reconcile
// request.
const agentPolicy = "tether-agent-changes-no-sync-spec"

// waitPolicyInForce waits until the API server enforces agentPolicy on s: a
// policy just installed is enforced once the API server's admission plugin has
// read and compiled it, a moment after it was created. The probe is a dry-run of
// a change the policy refuses, so that nothing is changed while it is not yet in
// force.
func waitPolicyInForce(t *testing.T, asAgent client.Client, s *v1alpha1.Sync) {
	t.Helper()
	harness.Eventually(t, waitTimeout, "the API server to enforce "+agentPolicy, func(ctx context.Context) (bool, error) {
		err := asAgent.Patch(ctx, s.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"source":{"path":"probe"}}}`)), client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), agentPolicy) {
			return true, nil
		}
		return false, err
	})
}

// addTenant adds tenant to the install the way tenants.yaml adds a tenant: a copy
// of the objects it holds for tenant from (its account, and the RoleBindings of
// the account and the agent), in tenant. It returns the RoleBindings and the
// account, in the order the test deletes them.
func (in *install) addTenant(t *testing.T, c client.Client, from, tenant string) []client.Object {
	t.Helper()
	var out []client.Object
	for _, obj := range in.objects {
		if obj.GetNamespace() != from {
			continue
		}
		data, err := json.Marshal(obj.Object)
		if err != nil {
			t.Fatal(err)
		}
		copied := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(strings.ReplaceAll(string(data), `"namespace":"`+from+`"`, `"namespace":"`+tenant+`"`)), &copied.Object); err != nil {
			t.Fatal(err)
		}
		create(t, c, copied)
		out = append(out, copied)
	}
	if len(out) == 0 {
		t.Fatalf("the install holds nothing in namespace %s", from)
	}
	return out
}

// agentArgsFor is agentArgs with the agent serving tenant only.
func (in *install) agentArgsFor(t *testing.T, tenant string) []string {
	t.Helper()
	args := in.agentArgs(t)
	found := false
	for i, arg := range args {
		if strings.HasPrefix(arg, "--watch-namespaces=") {
			args[i], found = "--watch-namespaces="+tenant, true
		}
	}
	if !found {
		t.Fatal("the install's agent has no --watch-namespaces")
	}
	return args
}

// waitAgentMayNot waits until the API server's authorizer no longer lets the
// install's agent verb resource in ns: deleted RoleBindings reach it a moment
// after they are deleted.
func waitAgentMayNot(t *testing.T, ns, verb, resource, group string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(controlplane.Shared(t).Config())
	if err != nil {
		t.Fatal(err)
	}
	user := "system:serviceaccount:" + agentNamespace + ":" + agentAccount
	harness.Eventually(t, waitTimeout, fmt.Sprintf("%s to be refused %s %s in %s", user, verb, resource, ns), func(ctx context.Context) (bool, error) {
		review, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               user,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + agentNamespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: resource, Group: group},
		}}, metav1.CreateOptions{})
		return err == nil && !review.Status.Allowed, err
	})
}

// agentClient is a client acting as the install's agent, straight to the API
// server, with a token of its account.
func agentClient(t *testing.T) client.Client {
	t.Helper()
	admin := controlplane.Shared(t).Config()
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	hour := int64(3600)
	tok, err := cs.CoreV1().ServiceAccounts(agentNamespace).CreateToken(t.Context(), agentAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: admin.Host, BearerToken: tok.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData, CAFile: admin.CAFile}}
	c, err := client.New(cfg, client.Options{Scheme: newClient(t).Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
