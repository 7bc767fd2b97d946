package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// The tenant namespaces deploy/overlays/namespaced names.
const teamA, teamB = "team-a", "team-b"

// Credentials of the git server of the tenancy tests.
const gitUser, gitPassword = "tenant", "s3cret-git-password"

// TestTenantsUnderTheNamespacedInstall installs deploy/overlays/namespaced as
// shipped and runs the real agent with its ServiceAccount's token, through a proxy
// that records every request: tenants deploy, drift is corrected by watch, prune and
// deletion work, and nothing reaches beyond a tenant's namespace or account; the
// agent is never refused, and every right it holds is used.
func TestTenantsUnderTheNamespacedInstall(t *testing.T) {
	c := newClient(t)
	tenantNamespaces(t, c)
	in := applyInstall(t, "namespaced.yaml")
	level := waitFlowControl(t, c)
	aud := startAuditor(t)
	git := gitserver.Start(t, gitserver.Options{Username: gitUser, Password: gitPassword})
	createSecret(t, c, teamA, "git-credentials")
	createSecret(t, c, teamB, "git-credentials")
	repoB := git.CreateRepo(t, "team-b")
	firstB := repoB.Commit(t, map[string]string{"shop/config.yaml": fmt.Sprintf(appConfig, "team b")}, "shop")
	repo := git.CreateRepo(t, "team-a")
	first := repo.Commit(t, map[string]string{
		"web/config.yaml":     fmt.Sprintf(appConfig, "hello"),
		"web/deployment.yaml": appDeployment,
	}, "web")
	elsewhere := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	outsider := tenantSync(elsewhere, "outsider", repo.URL(), "web")
	create(t, c, outsider)

	a := startAgentWith(t, agentKubeconfig(t, aud), in.agentArgs(t)...)
	web := tenantSync(teamA, "web", repo.URL(), "web")
	create(t, c, web)
	shop := tenantSync(teamB, "shop", repoB.URL(), "shop")
	create(t, c, shop)

	t.Run("a tenant's Sync applies as its namespace's tether-deployer", func(t *testing.T) {
		waitForSync(t, c, web, "Ready at the first commit", func(s *v1alpha1.Sync) bool {
			return s.Status.LastAppliedRevision == "main@sha1:"+first && isReady(s)
		})
		if !anyRequest(aud.requests(), func(r apiRequest) bool {
			return r.as == "system:serviceaccount:team-a:tether-deployer" && r.verb == "patch" && r.resource == "configmaps" && r.name == "web-config"
		}) {
			t.Errorf("no apply of ConfigMap web-config as system:serviceaccount:team-a:tether-deployer went through the proxy")
		}
		if anyRequest(aud.requests(), func(r apiRequest) bool { return r.as == "" && r.resource == "configmaps" && r.verb == "patch" }) {
			t.Errorf("the agent patched a ConfigMap as itself")
		}
		waitForSync(t, c, shop, "team-b's Sync Ready", func(s *v1alpha1.Sync) bool {
			return s.Status.LastAppliedRevision == "main@sha1:"+firstB && isReady(s)
		})
		waitConfigMap(t, c, teamB, "team b")
	})

	t.Run("a tenant's first sync is classified under the agent's priority level", func(t *testing.T) {
		// The API server classifies an impersonated request as the account it
		// acts as: the overlay adds each tenant's tether-deployer to the install's
		// FlowSchema, beside the agent's own account.
		for _, tenant := range []string{teamA, teamB} {
			deployer := "system:serviceaccount:" + tenant + ":tether-deployer"
			checkPriorityLevel(t, aud, level, "the applies as "+deployer, func(r apiRequest) bool {
				return r.as == deployer && r.verb == "patch" && r.resource == "configmaps"
			})
		}
		checkPriorityLevel(t, aud, level, "the agent's status writes", func(r apiRequest) bool {
			return r.as == "" && r.resource == "syncs"
		})
	})

	t.Run("drift is corrected by watch, under the overlay's RBAC", func(t *testing.T) {
		// Twice (the second correction repeats the first one's event), in both
		// tenants: the interval is an hour, so only a watch can bring it back.
		for _, value := range []string{"drifted", "drifted again"} {
			driftConfigMap(t, c, teamA, "web-config", value)
			driftConfigMap(t, c, teamB, "web-config", value)
			waitConfigMap(t, c, teamA, "hello")
			waitConfigMap(t, c, teamB, "team b")
		}
	})

	t.Run("an object that leaves git is pruned", func(t *testing.T) {
		second := repo.Commit(t, map[string]string{"web/deployment.yaml": ""}, "no deployment")
		pushed(t, a, repo)
		waitForSync(t, c, web, "Ready at the second commit", func(s *v1alpha1.Sync) bool {
			return s.Status.LastAppliedRevision == "main@sha1:"+second && isReady(s)
		})
		waitAbsent(t, c, "apps/v1", "Deployment", teamA, "web")
	})

	t.Run("a Sync reaching into team-b or the cluster is refused by name and writes nothing", func(t *testing.T) {
		reach := git.CreateRepo(t, "reach")
		reach.Commit(t, map[string]string{
			"app/local.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: local}\n",
			"app/intruder.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: intruder, namespace: team-b}\n",
			"app/cluster.yaml":  "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: team-a-everything}\nrules: [{apiGroups: ['*'], resources: ['*'], verbs: ['*']}]\n",
		}, "reach out")
		s := tenantSync(teamA, "reach", reach.URL(), "app")
		create(t, c, s)
		got := waitForSync(t, c, s, "Stalled: CrossNamespaceRefused", func(s *v1alpha1.Sync) bool {
			return apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.StalledCondition) &&
				apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.StalledCondition).Reason == v1alpha1.ReasonCrossNamespace
		})
		msg := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.StalledCondition).Message
		for _, want := range []string{"ConfigMap/team-b/intruder", "ClusterRole/team-a-everything (cluster-scoped)"} {
			if !strings.Contains(msg, want) {
				t.Errorf("Stalled message %q does not name %s", msg, want)
			}
		}
		for _, obj := range []client.Object{
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "local"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: teamB, Name: "intruder"}},
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "team-a-everything"}},
		} {
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
				t.Errorf("%T %s: %v; want it never written", obj, client.ObjectKeyFromObject(obj), err)
			}
		}
		if anyRequest(aud.requests(), func(r apiRequest) bool {
			return r.name == "intruder" || r.name == "local" || r.name == "team-a-everything"
		}) {
			t.Errorf("requests were made for the objects of a refused revision")
		}
	})

	t.Run("a Secret its account may not read is refused, and git never sees it", func(t *testing.T) {
		limitedAccount(t, c, teamA, "limited")
		createSecret(t, c, teamA, "platform-credentials")
		private := git.CreateRepo(t, "private")
		private.Commit(t, map[string]string{"app/cm.yaml": fmt.Sprintf(appConfig, "hi")}, "private")
		s := tenantSync(teamA, "sneaky", private.URL(), "app")
		s.Spec.ServiceAccountName = "limited"
		s.Spec.Source.SecretRef.Name = "platform-credentials"
		create(t, c, s)
		got := waitForSync(t, c, s, "SourceReady: Forbidden", func(s *v1alpha1.Sync) bool {
			c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.SourceReadyCondition)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonForbidden
		})
		msg := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.SourceReadyCondition).Message
		if !strings.Contains(msg, "Secret team-a/platform-credentials") || !strings.Contains(msg, "system:serviceaccount:team-a:limited") {
			t.Errorf("SourceReady message %q does not name the Secret and the account", msg)
		}
		if got := private.Requests(); got != (gitserver.Requests{}) {
			t.Errorf("git requests to the private repository: %+v; want none", got)
		}
	})

	t.Run("a Sync outside the watched namespaces is left alone", func(t *testing.T) {
		// Created before the agent started, which has since reconciled every Sync above.
		got := &v1alpha1.Sync{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(outsider), got); err != nil {
			t.Fatal(err)
		}
		if len(got.Finalizers) > 0 || len(got.Status.Conditions) > 0 {
			t.Errorf("Sync %s/outsider in an unwatched namespace was reconciled: finalizers %v, status %s", elsewhere, got.Finalizers, describeSync(got))
		}
	})

	t.Run("deleting a Sync deletes what it applied", func(t *testing.T) {
		for _, s := range []*v1alpha1.Sync{web, shop, {ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "reach"}}, {ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "sneaky"}}} {
			if err := c.Delete(t.Context(), s); err != nil {
				t.Fatal(err)
			}
		}
		for _, obj := range []client.Object{
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "web-config"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: teamB, Name: "web-config"}},
			&v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "web"}},
			&v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: teamB, Name: "shop"}},
			&v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "reach"}},
			&v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "sneaky"}},
		} {
			harness.Eventually(t, waitTimeout, fmt.Sprintf("%T %s to be gone", obj, client.ObjectKeyFromObject(obj)), func(ctx context.Context) (bool, error) {
				err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
				return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
			})
		}
	})

	t.Run("the agent's own rights suffice and are all used", func(t *testing.T) {
		checkAgentRights(t, in, aud, a, "system:serviceaccount:team-a:limited")
	})
}

// TestTenantsUnderTheDefaultInstall installs deploy/default as shipped and runs
// the real agent with its ServiceAccount's token: a Sync that names no account acts
// as the agent; a tenant's Sync acts as its account and cannot go where the account
// may not, even though the agent could.
func TestTenantsUnderTheDefaultInstall(t *testing.T) {
	c := newClient(t)
	in := applyInstall(t, "install.yaml")
	level := waitFlowControl(t, c)
	aud := startAuditor(t)
	cfg := controlplane.Shared(t).Config()
	team, victim, platform := controlplane.NewNamespace(t, cfg), controlplane.NewNamespace(t, cfg), controlplane.NewNamespace(t, cfg)
	git := gitserver.Start(t, gitserver.Options{Username: gitUser, Password: gitPassword})

	createSecret(t, c, agentNamespace, "e2e-platform-credentials")
	t.Cleanup(func() {
		_ = c.Delete(context.WithoutCancel(t.Context()), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: agentNamespace, Name: "e2e-platform-credentials"}})
	})
	platformRepo := git.CreateRepo(t, "platform")
	platformRev := platformRepo.Commit(t, map[string]string{
		"app/config.yaml": fmt.Sprintf(appConfig, "platform"),
		"app/extra.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\n",
	}, "platform")
	platformSync := tenantSync(agentNamespace, "e2e-platform", platformRepo.URL(), "app")
	platformSync.Spec.Source.SecretRef.Name = "e2e-platform-credentials"
	platformSync.Spec.Destination.Namespace = platform
	platformSync.Spec.PruneLimit = ptrIntOrString("100%") // one of its two objects leaves git

	limitedAccount(t, c, team, "deployer")
	createSecret(t, c, team, "git-credentials")
	teamRepo := git.CreateRepo(t, "team")
	teamRepo.Commit(t, map[string]string{
		"app/config.yaml":   fmt.Sprintf(appConfig, "hello"),
		"app/intruder.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: intruder, namespace: %s}\n", victim),
		"app/cluster.yaml":  "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: " + team + "-everything}\nrules: []\n",
	}, "reach out")
	teamSync := tenantSync(team, "web", teamRepo.URL(), "app")
	teamSync.Spec.ServiceAccountName = "deployer"
	all := intstr.FromString("100%") // the refused objects leave git at once
	teamSync.Spec.PruneLimit = &all

	a := startAgentWith(t, agentKubeconfig(t, aud), in.agentArgs(t)...)
	create(t, c, platformSync)
	create(t, c, teamSync)
	t.Cleanup(func() {
		_ = c.Delete(context.WithoutCancel(t.Context()), &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: agentNamespace, Name: "e2e-platform"}})
	})

	t.Run("a Sync naming no account acts as the agent, and reports what it did", func(t *testing.T) {
		got := waitForSync(t, c, platformSync, "Ready", func(s *v1alpha1.Sync) bool {
			return s.Status.LastAppliedRevision == "main@sha1:"+platformRev && isReady(s)
		})
		waitConfigMap(t, c, platform, "platform")
		if got.Status.ObservedGeneration != got.Generation || got.Status.Sync != v1alpha1.SyncStatusSynced || len(plan.Inventory(got.Status)) != 2 {
			t.Errorf("status: observedGeneration %d of %d, sync %s, inventory %v; want current, Synced, two ConfigMaps",
				got.Status.ObservedGeneration, got.Generation, got.Status.Sync, plan.Inventory(got.Status))
		}
		waitEvent(t, c, platformSync, v1alpha1.ReasonApplied)
	})

	t.Run("the agent's own first sync is classified under its priority level", func(t *testing.T) {
		checkPriorityLevel(t, aud, level, "the agent's applies", func(r apiRequest) bool {
			return r.as == "" && r.verb == "patch" && r.resource == "configmaps" && r.namespace == platform
		})
	})

	t.Run("the agent leads through the install's Lease", func(t *testing.T) {
		lease := &coordinationv1.Lease{}
		harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: agentNamespace, Name: leaseName}, lease))
		if h := lease.Spec.HolderIdentity; h == nil || *h == "" {
			t.Errorf("Lease %s/%s has no holder", agentNamespace, leaseName)
		}
	})

	t.Run("an object that leaves git is pruned", func(t *testing.T) {
		rev := platformRepo.Commit(t, map[string]string{"app/extra.yaml": ""}, "no extra")
		pushed(t, a, platformRepo)
		waitForSync(t, c, platformSync, "Ready without extra", func(s *v1alpha1.Sync) bool {
			return s.Status.LastAppliedRevision == "main@sha1:"+rev && isReady(s) && len(plan.Inventory(s.Status)) == 1
		})
		waitAbsent(t, c, "v1", "ConfigMap", platform, "extra")
	})

	t.Run("a tenant's Sync is refused, by object, verb and account, where its account may not go", func(t *testing.T) {
		got := waitForSync(t, c, teamSync, "Stalled: Forbidden", func(s *v1alpha1.Sync) bool {
			c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.StalledCondition)
			return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonForbidden
		})
		msg := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.StalledCondition).Message
		for _, want := range []string{"ConfigMap/" + victim + "/intruder", "ClusterRole/" + team + "-everything", `User "system:serviceaccount:` + team + `:deployer"`, "cannot patch"} {
			if !strings.Contains(msg, want) {
				t.Errorf("Stalled message %q does not name %s", msg, want)
			}
		}
		for _, obj := range []client.Object{
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: victim, Name: "intruder"}},
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: team + "-everything"}},
		} {
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
				t.Errorf("%T %s: %v; want it never written", obj, client.ObjectKeyFromObject(obj), err)
			}
		}
	})

	t.Run("within its account's rights it applies, and drift is corrected by watch", func(t *testing.T) {
		rev := teamRepo.Commit(t, map[string]string{"app/intruder.yaml": "", "app/cluster.yaml": ""}, "stay home")
		pushed(t, a, teamRepo)
		waitForSync(t, c, teamSync, "Ready", func(s *v1alpha1.Sync) bool {
			return s.Status.LastAppliedRevision == "main@sha1:"+rev && isReady(s)
		})
		// Twice: the second correction repeats the first one's event.
		for _, value := range []string{"drifted", "drifted again"} {
			driftConfigMap(t, c, team, "web-config", value)
			waitConfigMap(t, c, team, "hello")
		}
	})

	t.Run("deleting the Syncs deletes what they applied", func(t *testing.T) {
		for _, s := range []*v1alpha1.Sync{platformSync, teamSync} {
			if err := c.Delete(t.Context(), s); err != nil {
				t.Fatal(err)
			}
		}
		for _, ns := range []string{platform, team} {
			waitAbsent(t, c, "v1", "ConfigMap", ns, "web-config")
		}
	})

	t.Run("the agent's own rights suffice and are all used", func(t *testing.T) {
		checkAgentRights(t, in, aud, a, "system:serviceaccount:"+team+":")
	})
}

// tenantNamespaces creates the tenant namespaces deploy/namespaced.yaml names,
// unless they exist.
func tenantNamespaces(t *testing.T, c client.Client) {
	t.Helper()
	for _, ns := range []string{teamA, teamB} {
		err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// tenantSync is a Sync of path at url's main branch, into its own namespace, with
// the git server's credentials from Secret git-credentials, polling hourly (only a
// watch or a spec change reconciles it within a test).
func tenantSync(ns, name, url, path string) *v1alpha1.Sync {
	return &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SyncSpec{
			Source: v1alpha1.SourceSpec{
				URL: url, Ref: v1alpha1.GitRef{Branch: "main"}, Path: path,
				SecretRef: &v1alpha1.LocalObjectReference{Name: "git-credentials"},
				Interval:  &metav1.Duration{Duration: time.Hour},
			},
			Destination: v1alpha1.DestinationSpec{Namespace: ns},
		},
	}
}

func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
}

func createSecret(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	create(t, c, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data:       map[string][]byte{"username": []byte(gitUser), "password": []byte(gitPassword)},
	})
}

// limitedAccount creates an account that may do anything with ConfigMaps in ns, and
// read the Secret git-credentials there: nothing else.
func limitedAccount(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	create(t, c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	create(t, c, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"git-credentials"}},
	}})
	create(t, c, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
	})
}

// pushed tells the agent, through its webhook receiver, that main of repo moved, as
// a git host would: the Syncs that follow it reconcile at once instead of within
// their hourly interval.
func pushed(t *testing.T, a *agent, repo *gitserver.Repo) {
	t.Helper()
	body := fmt.Appendf(nil, `{"ref": "refs/heads/main", "repository": {"clone_url": %q}}`, repo.URL())
	if code := postHook(t, a, body, webhookSecret); code != http.StatusAccepted {
		t.Fatalf("webhook: status %d, want 202", code)
	}
}

func driftConfigMap(t *testing.T, c client.Client, ns, name, value string) {
	t.Helper()
	driftConfigMapKey(t, c, ns, name, "greeting", value)
}

// driftConfigMapKey sets key of ConfigMap name to value, as a person with kubectl
// edit would.
func driftConfigMapKey(t *testing.T, c client.Client, ns, name, key, value string) {
	t.Helper()
	patch := fmt.Appendf(nil, `{"data":{%q:%q}}`, key, value)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.Patch(t.Context(), cm, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("e2e-drift")); err != nil {
		t.Fatal(err)
	}
}

// waitConfigMap waits until ConfigMap web-config (appConfig) in ns says greeting.
func waitConfigMap(t *testing.T, c client.Client, ns, greeting string) {
	t.Helper()
	harness.Eventually(t, waitTimeout, fmt.Sprintf("ConfigMap %s/web-config to say %s", ns, greeting), func(ctx context.Context) (bool, error) {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-config"}, cm); err != nil {
			return false, err
		}
		return cm.Data["greeting"] == greeting, nil
	})
}

func anyRequest(reqs []apiRequest, match func(apiRequest) bool) bool {
	for _, r := range reqs {
		if match(r) {
			return true
		}
	}
	return false
}

// waitEvent waits for an Event of reason about Sync s.
func waitEvent(t *testing.T, c client.Client, s *v1alpha1.Sync, reason string) {
	t.Helper()
	harness.Eventually(t, waitTimeout, "an Event "+reason+" about Sync "+s.Name, func(ctx context.Context) (bool, error) {
		events := &corev1.EventList{}
		if err := c.List(ctx, events, client.InNamespace(s.Namespace)); err != nil {
			return false, err
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Kind == "Sync" && e.InvolvedObject.Name == s.Name && e.Reason == reason
		}), nil
	})
}

func describeSync(s *v1alpha1.Sync) string {
	var b strings.Builder
	for _, c := range s.Status.Conditions {
		fmt.Fprintf(&b, "%s=%s %s: %s; ", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}
