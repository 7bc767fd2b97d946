package sync_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"tether.dev/tether/api/v1alpha1"
	tethersync "tether.dev/tether/sync"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// TestATenantNamespaceDeletedWithItsAccountsFinishes: deleting a tenant namespace
// removes the accounts its Syncs act as and their RoleBindings, in no order Tether
// can count on. The test control plane runs no namespace controller, so the test
// plays its part: it marks the namespace Terminating, deletes the accounts' rights
// or the accounts, then the Syncs. Each Sync lets go; what it applied inside the
// namespace is the namespace's to delete, and what it applied elsewhere is left
// in place and named.
func TestATenantNamespaceDeletedWithItsAccountsFinishes(t *testing.T) {
	a := startAgent(t, tethersync.DefaultTenancyOptions())
	cfg := controlplane.Shared(t).Config()
	team, other := controlplane.NewNamespace(t, cfg), controlplane.NewNamespace(t, cfg)
	// Two accounts: deployer's account will be deleted, builder's right to delete in
	// the namespace withdrawn while the account stays.
	for _, name := range []string{"deployer", "builder"} {
		account(t, a.Client, team, name)
		grant(t, a.Client, team, team, name, configMapsAll...)
		grant(t, a.Client, other, team, name, configMapsAll...)
	}
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "tenant")
	commit := repo.Commit(t, map[string]string{
		"deployer/mine.yaml":      configMapYAML("deployer-mine", "hello"),
		"deployer/elsewhere.yaml": configMapIn(other, "deployer-elsewhere", "hello"),
		"builder/mine.yaml":       configMapYAML("builder-mine", "hello"),
		"builder/elsewhere.yaml":  configMapIn(other, "builder-elsewhere", "hello"),
	}, "two tenants' apps")
	syncs := map[string]*v1alpha1.Sync{}
	for _, name := range []string{"deployer", "builder"} {
		syncs[name] = a.newSync(t, team, repo.URL(), func(s *v1alpha1.Sync) {
			s.Name, s.Spec.Source.Path, s.Spec.ServiceAccountName = name, name, name
		})
	}
	for _, s := range syncs {
		a.WaitApplied(t, s, commit)
	}
	deployer, builder := syncs["deployer"], syncs["builder"]

	t.Run("an account deleted by mistake keeps its Sync waiting", func(t *testing.T) {
		harness.Must(t, a.Client.Delete(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "deployer"}}))
		harness.Must(t, a.Client.Delete(t.Context(), deployer))
		got := a.WaitFor(t, deployer, "deletion blocked: ServiceAccountNotFound", func(s *v1alpha1.Sync) bool {
			c := condition(s, v1alpha1.ReadyCondition)
			return c.Reason == v1alpha1.ReasonDeletionBlocked && strings.Contains(c.Message, "ServiceAccount "+team+"/deployer does not exist")
		})
		if !controllerutil.ContainsFinalizer(got, v1alpha1.Finalizer) {
			t.Fatal("the finalizer was removed while the namespace stays")
		}
	})

	a.events() // drop the events so far
	harness.Must(t, a.Client.Delete(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team}}))
	harness.Eventually(t, waitTimeout, "namespace "+team+" to be Terminating", func(ctx context.Context) (bool, error) {
		ns := &corev1.Namespace{}
		err := a.Client.Get(ctx, client.ObjectKey{Name: team}, ns)
		return ns.DeletionTimestamp != nil, err
	})

	t.Run("a Sync whose account went first is released, and names what it left elsewhere", func(t *testing.T) {
		// Its Sync is already being deleted and blocked, retrying with backoff; the
		// test asks at once rather than wait for the next retry. (A reconcile of the
		// agent's own may win the race and release it first.)
		_, _ = a.Reconciler.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(deployer)})
		waitGone(t, a.Client, deployer)
		if !hasEvent(a.events(), v1alpha1.ReasonObjectsLeftBehind, "ConfigMap/"+other+"/deployer-elsewhere") {
			t.Errorf("no Warning %s event naming ConfigMap/%s/deployer-elsewhere", v1alpha1.ReasonObjectsLeftBehind, other)
		}
		// Never deleted with the agent's own rights.
		for _, key := range []client.ObjectKey{{Namespace: other, Name: "deployer-elsewhere"}, {Namespace: team, Name: "deployer-mine"}} {
			if err := a.Client.Get(t.Context(), key, &corev1.ConfigMap{}); err != nil {
				t.Errorf("ConfigMap %s, which the account could not delete: %v", key, err)
			}
		}
	})

	t.Run("a Sync whose account may no longer delete in the namespace deletes what it still may, and is released", func(t *testing.T) {
		// (An account that may not even read an object drops it from the inventory
		// and never blocks; one that may read but not delete used to block.)
		grant(t, a.Client, team, team, "builder", configMapsRead...)
		waitDenied(t, a.Client, team, team, "builder", "delete")
		harness.Must(t, a.Client.Delete(t.Context(), builder))
		waitGone(t, a.Client, builder)
		if events := a.events(); !hasEvent(events, v1alpha1.ReasonObjectsLeftBehind, "nothing outside the namespace was left") {
			t.Errorf("no Warning %s event saying nothing outside the namespace was left; events: %q", v1alpha1.ReasonObjectsLeftBehind, events)
		}
		err := a.Client.Get(t.Context(), client.ObjectKey{Namespace: other, Name: "builder-elsewhere"}, &corev1.ConfigMap{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap %s/builder-elsewhere, which the account could still delete, is still there: %v", other, err)
		}
		if err := a.Client.Get(t.Context(), client.ObjectKey{Namespace: team, Name: "builder-mine"}, &corev1.ConfigMap{}); err != nil {
			t.Errorf("ConfigMap %s/builder-mine, left to the namespace's deletion: %v", team, err)
		}
	})
}

// waitGone waits until the Sync no longer exists.
func waitGone(t *testing.T, c client.Client, s *v1alpha1.Sync) {
	t.Helper()
	harness.Eventually(t, waitTimeout, "Sync "+s.Name+" to be gone", func(ctx context.Context) (bool, error) {
		got := &v1alpha1.Sync{}
		err := c.Get(ctx, client.ObjectKeyFromObject(s), got)
		if err == nil {
			return false, fmt.Errorf("still there: %s", harness.Describe(got))
		}
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}
