package sync_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"tether.dev/tether/api/v1alpha1"
	tethersync "tether.dev/tether/sync"
	"tether.dev/tether/test/apicount"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/rig"
)

// Rules a test grants an account in a namespace.
var (
	configMapsAll  = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}}}
	configMapsRead = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}}
)

// account creates ServiceAccount name in ns.
func account(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	harness.Must(t, c.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
}

// grant gives ServiceAccount accountNS/name exactly rules in ns (a Role and a
// RoleBinding named after the account), replacing what an earlier grant gave.
func grant(t *testing.T, c client.Client, ns, accountNS, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: accountNS + "-" + name}}
	_, err := controllerutil.CreateOrUpdate(t.Context(), c, role, func() error { role.Rules = rules; return nil })
	harness.Must(t, err)
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role.Name}}
	_, err = controllerutil.CreateOrUpdate(t.Context(), c, binding, func() error {
		binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}
		binding.Subjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: accountNS, Name: name}}
		return nil
	})
	harness.Must(t, err)
	// RBAC takes effect when the API server's informers see it: wait until the
	// account can do the first verb of the first rule, as the API server judges it.
	if len(rules) > 0 {
		waitAllowed(t, c, ns, accountNS, name, rules[0])
	}
}

// waitAllowed waits until the API server lets the account do rule's first verb.
func waitAllowed(t *testing.T, c client.Client, ns, accountNS, name string, rule rbacv1.PolicyRule) {
	t.Helper()
	verb := rule.Verbs[0]
	if verb == "*" {
		verb = "delete"
	}
	harness.Eventually(t, waitTimeout, "RBAC to let "+name+" "+verb+" "+rule.Resources[0]+" in "+ns, func(ctx context.Context) (bool, error) {
		return canI(ctx, c, ns, tethersync.ServiceAccountUser(accountNS, name), verb, rule.Resources[0])
	})
}

// canI asks the API server's authorizer whether user may verb resource in ns.
func canI(ctx context.Context, c client.Client, ns, user, verb, resource string) (bool, error) {
	review := &authorizationv1.SubjectAccessReview{}
	review.Spec.User = user
	review.Spec.Groups = []string{"system:serviceaccounts", "system:authenticated"}
	review.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: resource}
	if err := c.Create(ctx, review); err != nil {
		return false, err
	}
	return review.Status.Allowed, nil
}

// configMapsIn returns the resourceVersion of every ConfigMap in ns, by name: equal
// snapshots mean nothing in ns was created, changed or deleted in between.
func configMapsIn(t *testing.T, c client.Client, ns string) map[string]string {
	t.Helper()
	list := &corev1.ConfigMapList{}
	harness.Must(t, c.List(t.Context(), list, client.InNamespace(ns)))
	out := map[string]string{}
	for _, cm := range list.Items {
		out[cm.Name] = cm.ResourceVersion
	}
	return out
}

func configMapIn(ns, name, greeting string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s}\ndata: {greeting: %q}\n", name, ns, greeting)
}

func condition(s *v1alpha1.Sync, condType string) metav1.Condition {
	if c := apimeta.FindStatusCondition(s.Status.Conditions, condType); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// stalledWith reports whether s is Stalled for reason, with a message holding every
// one of words.
func stalledWith(s *v1alpha1.Sync, reason string, words ...string) bool {
	c := condition(s, v1alpha1.StalledCondition)
	if c.Status != metav1.ConditionTrue || c.Reason != reason || c.ObservedGeneration != s.Generation {
		return false
	}
	for _, w := range words {
		if !strings.Contains(c.Message, w) {
			return false
		}
	}
	return true
}

func setSpec(t *testing.T, c client.Client, s *v1alpha1.Sync, mutate func(*v1alpha1.Sync)) {
	t.Helper()
	harness.Eventually(t, waitTimeout, "updating the Sync", func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
			return false, err
		}
		mutate(s)
		return true, c.Update(ctx, s)
	})
}

func TestSyncActsAsItsServiceAccount(t *testing.T) {
	a := startAgent(t, tethersync.DefaultTenancyOptions())
	cfg := controlplane.Shared(t).Config()
	team, other := controlplane.NewNamespace(t, cfg), controlplane.NewNamespace(t, cfg)
	account(t, a.Client, team, "deployer")
	grant(t, a.Client, team, team, "deployer", append(configMapsAll,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"git-credentials"}})...)
	git := gitserver.Start(t, gitserver.Options{Username: "tenant", Password: "s3cret"})
	repo := git.CreateRepo(t, "tenant")
	first := repo.Commit(t, map[string]string{"apps/mine.yaml": configMapYAML("mine", "hello")}, "mine")
	for _, name := range []string{"git-credentials", "platform-credentials"} {
		harness.Must(t, a.Client.Create(t.Context(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name},
			Data:       map[string][]byte{"username": []byte("tenant"), "password": []byte("s3cret")},
		}))
	}
	s := a.newSync(t, team, repo.URL(), func(s *v1alpha1.Sync) {
		s.Spec.ServiceAccountName = "deployer"
		s.Spec.Source.SecretRef = &v1alpha1.LocalObjectReference{Name: "git-credentials"}
	})

	t.Run("applies what its account may, with credentials its account may read", func(t *testing.T) {
		a.WaitApplied(t, s, first)
		cm := &corev1.ConfigMap{}
		harness.Must(t, a.Client.Get(t.Context(), client.ObjectKey{Namespace: team, Name: "mine"}, cm))
	})

	t.Run("another account does not ride on what the first one verified", func(t *testing.T) {
		// Nothing changed in git or in the cluster, so the first account's verified
		// objects would need no request at all; a read-only account must still be
		// refused the apply.
		account(t, a.Client, team, "reader")
		grant(t, a.Client, team, team, "reader", append(configMapsRead,
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"git-credentials"}})...)
		setSpec(t, a.Client, s, func(s *v1alpha1.Sync) { s.Spec.ServiceAccountName = "reader" })
		a.WaitFor(t, s, "Stalled: Forbidden to patch", func(s *v1alpha1.Sync) bool {
			return stalledWith(s, v1alpha1.ReasonForbidden, "ConfigMap/"+team+"/mine",
				`User "system:serviceaccount:`+team+`:reader"`, `cannot patch resource "configmaps"`)
		})
		setSpec(t, a.Client, s, func(s *v1alpha1.Sync) { s.Spec.ServiceAccountName = "deployer" })
		a.WaitFor(t, s, "Ready again as deployer", func(s *v1alpha1.Sync) bool {
			return rig.IsReady(s) && condition(s, v1alpha1.ReadyCondition).ObservedGeneration == s.Generation
		})
	})

	t.Run("an object where its account has no rights fails by name, verb and account, and is not written", func(t *testing.T) {
		before := configMapsIn(t, a.Client, other)
		repo.Commit(t, map[string]string{"apps/intruder.yaml": configMapIn(other, "intruder", "hi")}, "reach into another namespace")
		a.Source.Refresh(repo.URL()) // what a push webhook does; otherwise the next interval
		a.Reconcile(t, s)
		a.WaitFor(t, s, "Stalled: Forbidden", func(s *v1alpha1.Sync) bool {
			return stalledWith(s, v1alpha1.ReasonForbidden, "ConfigMap/"+other+"/intruder",
				// The watch says the object does not exist, so the first request made as
				// the account is the dry-run of the apply.
				`User "system:serviceaccount:`+team+`:deployer"`, `cannot patch resource "configmaps"`)
		})
		if diff := cmp.Diff(before, configMapsIn(t, a.Client, other)); diff != "" {
			t.Errorf("ConfigMaps of %s changed (-before +after):\n%s", other, diff)
		}
	})

	t.Run("a Secret its account may not read is refused, and git never sees it", func(t *testing.T) {
		before := repo.Requests()
		setSpec(t, a.Client, s, func(s *v1alpha1.Sync) { s.Spec.Source.SecretRef.Name = "platform-credentials" })
		got := a.WaitFor(t, s, "SourceReady: Forbidden", func(s *v1alpha1.Sync) bool {
			c := condition(s, v1alpha1.SourceReadyCondition)
			return c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonForbidden && c.ObservedGeneration == s.Generation
		})
		msg := condition(got, v1alpha1.SourceReadyCondition).Message
		for _, want := range []string{"Secret " + team + "/platform-credentials", `User "system:serviceaccount:` + team + `:deployer"`, `cannot get resource "secrets"`} {
			if !strings.Contains(msg, want) {
				t.Errorf("SourceReady message %q does not name %q", msg, want)
			}
		}
		if strings.Contains(msg, "s3cret") {
			t.Errorf("SourceReady message holds the password: %q", msg)
		}
		if after := repo.Requests(); after != before {
			t.Errorf("git requests went from %+v to %+v; want none with a Secret the account may not read", before, after)
		}
	})

	t.Run("an account that does not exist stalls the Sync", func(t *testing.T) {
		setSpec(t, a.Client, s, func(s *v1alpha1.Sync) { s.Spec.ServiceAccountName = "nobody" })
		a.WaitFor(t, s, "Stalled: ServiceAccountNotFound", func(s *v1alpha1.Sync) bool {
			return stalledWith(s, v1alpha1.ReasonServiceAccountNotFound, "ServiceAccount "+team+"/nobody does not exist")
		})
	})
}

// requestsAbout lists the requests c counted about the revision's objects: in
// the namespaces given, and of cluster-scoped RBAC kinds. Every agent of the
// package watches every namespace, so an agent also serves the Syncs earlier
// tests left in theirs (the shared control plane has no namespace controller to
// remove them); their requests go through the same counter and are not this
// revision's.
func requestsAbout(c *apicount.Counter, namespaces ...string) []string {
	var out []string
	for _, kind := range []string{apicount.Get, apicount.List, apicount.DryRun, apicount.Patch, apicount.Create, apicount.Update, apicount.Delete} {
		for _, p := range c.Log(kind) {
			about := strings.Contains(p, "/clusterroles")
			for _, ns := range namespaces {
				about = about || strings.Contains(p, "/namespaces/"+ns+"/") || strings.HasSuffix(p, "/namespaces/"+ns)
			}
			if about {
				out = append(out, kind+" "+p)
			}
		}
	}
	return out
}

func TestCrossNamespaceObjectsAreRefusedWhole(t *testing.T) {
	opts := tethersync.DefaultTenancyOptions()
	opts.AllowCrossNamespace = false
	opts.DefaultServiceAccount = "deployer"
	a := startAgent(t, opts)
	cfg := controlplane.Shared(t).Config()
	team, other := controlplane.NewNamespace(t, cfg), controlplane.NewNamespace(t, cfg)
	account(t, a.Client, team, "deployer")
	// Even an account with rights in the other namespace may not go there.
	grant(t, a.Client, team, team, "deployer", configMapsAll...)
	grant(t, a.Client, other, team, "deployer", configMapsAll...)
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "tenant")
	repo.Commit(t, map[string]string{
		"apps/mine.yaml":     configMapYAML("mine", "hello"),
		"apps/intruder.yaml": configMapIn(other, "intruder", "hi"),
		"apps/cluster.yaml":  "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: " + team + "-everything}\nrules: []\n",
	}, "reach out")
	s := a.newSync(t, team, repo.URL())

	t.Run("names every object outside the namespace and writes nothing", func(t *testing.T) {
		before := requestsAbout(a.applies, team, other)
		a.WaitFor(t, s, "Stalled: CrossNamespaceRefused", func(s *v1alpha1.Sync) bool {
			return stalledWith(s, v1alpha1.ReasonCrossNamespace, "ConfigMap/"+other+"/intruder", "ClusterRole/"+team+"-everything (cluster-scoped)")
		})
		if got := configMapsIn(t, a.Client, team); got["mine"] != "" {
			t.Errorf("ConfigMap %s/mine was applied from a refused revision", team)
		}
		if got := configMapsIn(t, a.Client, other); got["intruder"] != "" {
			t.Errorf("ConfigMap %s/intruder was applied", other)
		}
		if diff := cmp.Diff(before, requestsAbout(a.applies, team, other)); diff != "" {
			t.Errorf("requests made for a refused revision (-before +after):\n%s", diff)
		}
	})

	t.Run("a revision within the namespace applies, as the default account", func(t *testing.T) {
		second := repo.Commit(t, map[string]string{"apps/intruder.yaml": "", "apps/cluster.yaml": ""}, "stay home")
		a.Source.Refresh(repo.URL())
		a.Reconcile(t, s)
		a.WaitApplied(t, s, second)
	})

	t.Run("a wiped inventory is rebuilt as the account, within the namespace", func(t *testing.T) {
		// A reconcile that starts with an inventory forgets the earlier search that
		// found nothing (while the revision was refused).
		a.Reconcile(t, s)
		got := &v1alpha1.Sync{}
		harness.Must(t, a.Client.Get(t.Context(), client.ObjectKeyFromObject(s), got))
		got.Status = v1alpha1.SyncStatus{} // as a restore from a backup without status would leave it
		harness.Must(t, a.Client.Status().Update(t.Context(), got))
		a.events() // drop the events so far
		harness.Eventually(t, waitTimeout, "the manager's cache to see the wiped status", func(ctx context.Context) (bool, error) {
			cached := &v1alpha1.Sync{}
			err := a.Reconciler.Cluster.Syncs.Get(ctx, client.ObjectKeyFromObject(s), cached)
			return err == nil && cached.ResourceVersion == got.ResourceVersion, err
		})
		a.Reconcile(t, s)
		if !hasEvent(a.events(), v1alpha1.ReasonInventoryRebuilt, "rebuilt it from 1 objects") {
			t.Errorf("no %s event for ConfigMap mine, found by label in %s", v1alpha1.ReasonInventoryRebuilt, team)
		}
	})
}

// TestAnAuthorWithoutRightsChangesNothingThroughTether: the author of a Sync in
// their own namespace, whose account has no rights (or read-only rights) in another
// namespace, changes nothing there through any verb Tether uses.
func TestAnAuthorWithoutRightsChangesNothingThroughTether(t *testing.T) {
	a := startAgent(t, tethersync.DefaultTenancyOptions())
	cfg := controlplane.Shared(t).Config()
	team, victim := controlplane.NewNamespace(t, cfg), controlplane.NewNamespace(t, cfg)
	account(t, a.Client, team, "deployer")
	grant(t, a.Client, team, team, "deployer", configMapsAll...)
	// An object made by `kubectl apply` (client-side), which Tether would take over.
	existing := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: victim, Name: "existing"}, Data: map[string]string{"greeting": "theirs"}}
	harness.Must(t, a.Client.Create(t.Context(), existing, client.FieldOwner("kubectl-client-side-apply")))
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "tenant")
	repo.Commit(t, map[string]string{
		"apps/mine.yaml":     configMapYAML("mine", "hello"),
		"apps/existing.yaml": configMapIn(victim, "existing", "ours"),
		"apps/new.yaml":      configMapIn(victim, "new", "ours"),
	}, "reach into the victim")
	before := configMapsIn(t, a.Client, victim)
	s := a.newSync(t, team, repo.URL(), func(s *v1alpha1.Sync) {
		s.Spec.ServiceAccountName = "deployer"
		all := intstr.FromString("100%") // the failed objects of the first revisions leave git at once
		s.Spec.PruneLimit = &all
	})
	account := `User "system:serviceaccount:` + team + `:deployer"`
	unchanged := func(t *testing.T) {
		t.Helper()
		if diff := cmp.Diff(before, configMapsIn(t, a.Client, victim)); diff != "" {
			t.Errorf("ConfigMaps of %s changed (-before +after):\n%s", victim, diff)
		}
	}

	t.Run("get: no rights, nothing read or written", func(t *testing.T) {
		a.WaitFor(t, s, "Stalled: Forbidden to get", func(s *v1alpha1.Sync) bool {
			return stalledWith(s, v1alpha1.ReasonForbidden, account, "ConfigMap/"+victim+"/existing",
				"ConfigMap/"+victim+"/new", `cannot get resource "configmaps"`)
		})
		unchanged(t)
	})

	t.Run("patch: read-only rights, no dry-run, apply or take-over", func(t *testing.T) {
		grant(t, a.Client, victim, team, "deployer", configMapsRead...)
		a.Reconcile(t, s)
		a.WaitFor(t, s, "Stalled: Forbidden to patch", func(s *v1alpha1.Sync) bool {
			return stalledWith(s, v1alpha1.ReasonForbidden, account, "ConfigMap/"+victim+"/existing",
				"ConfigMap/"+victim+"/new", `cannot patch resource "configmaps"`)
		})
		unchanged(t)
	})

	// What the account applied while it had rights stays, once they are withdrawn.
	grant(t, a.Client, victim, team, "deployer", configMapsAll...)
	applied := repo.Commit(t, map[string]string{"apps/existing.yaml": "", "apps/new.yaml": "", "apps/temp.yaml": configMapIn(victim, "temp", "ours")}, "one object there")
	a.Source.Refresh(repo.URL())
	a.Reconcile(t, s)
	a.WaitApplied(t, s, applied)
	grant(t, a.Client, victim, team, "deployer", configMapsRead...)
	waitDenied(t, a.Client, victim, team, "deployer", "delete")
	before = configMapsIn(t, a.Client, victim)

	t.Run("delete: prune of an object it applied is refused", func(t *testing.T) {
		repo.Commit(t, map[string]string{"apps/temp.yaml": ""}, "prune it")
		a.Source.Refresh(repo.URL())
		a.Reconcile(t, s)
		a.WaitFor(t, s, "Stalled: Forbidden to delete", func(s *v1alpha1.Sync) bool {
			return stalledWith(s, v1alpha1.ReasonForbidden, account, "ConfigMap/"+victim+"/temp: delete failed", `cannot delete resource "configmaps"`)
		})
		unchanged(t)
	})

	t.Run("patch: orphaning on deletion is refused", func(t *testing.T) {
		setSpec(t, a.Client, s, func(s *v1alpha1.Sync) { s.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan })
		harness.Must(t, a.Client.Delete(t.Context(), s))
		a.WaitFor(t, s, "deletion blocked: Forbidden to patch", func(s *v1alpha1.Sync) bool {
			c := condition(s, v1alpha1.ReadyCondition)
			return c.Reason == v1alpha1.ReasonDeletionBlocked && strings.Contains(c.Message, "ConfigMap/"+victim+"/temp: orphan failed") &&
				strings.Contains(c.Message, `cannot patch resource "configmaps"`) && strings.Contains(c.Message, account)
		})
		unchanged(t)
	})

	t.Run("delete: deleting the Sync is refused", func(t *testing.T) {
		setSpec(t, a.Client, s, func(s *v1alpha1.Sync) { s.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete })
		a.WaitFor(t, s, "deletion blocked: Forbidden to delete", func(s *v1alpha1.Sync) bool {
			c := condition(s, v1alpha1.ReadyCondition)
			return c.Reason == v1alpha1.ReasonDeletionBlocked && strings.Contains(c.Message, "ConfigMap/"+victim+"/temp: delete failed") &&
				strings.Contains(c.Message, `cannot delete resource "configmaps"`)
		})
		unchanged(t)
	})

	t.Run("with the rights back, deletion completes", func(t *testing.T) {
		grant(t, a.Client, victim, team, "deployer", configMapsAll...)
		harness.Eventually(t, waitTimeout, "the Sync to be gone", func(ctx context.Context) (bool, error) {
			err := a.Client.Get(ctx, client.ObjectKeyFromObject(s), &v1alpha1.Sync{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
		if _, ok := configMapsIn(t, a.Client, victim)["temp"]; ok {
			t.Errorf("ConfigMap %s/temp survived the deletion of its Sync", victim)
		}
	})
}

// waitDenied waits until the API server no longer lets the account verb ConfigMaps
// in ns.
func waitDenied(t *testing.T, c client.Client, ns, accountNS, name, verb string) {
	t.Helper()
	harness.Eventually(t, waitTimeout, "RBAC to stop "+name+" "+verb+"ing configmaps in "+ns, func(ctx context.Context) (bool, error) {
		ok, err := canI(ctx, c, ns, tethersync.ServiceAccountUser(accountNS, name), verb, "configmaps")
		return !ok, err
	})
}
