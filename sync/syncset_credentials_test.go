package sync_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// TestASyncSetReadsItsGeneratorsCredentialsAsItsSyncs runs the agent as it
// ships (the SyncSet controller beside the Sync reconciler): a git generator's
// secretRef is read as the template's serviceAccountName, so a SyncSet reads a
// private repository with a Secret its Syncs' account may read, and is refused
// one that account may not read, with its Syncs kept and git never asked.
func TestASyncSetReadsItsGeneratorsCredentialsAsItsSyncs(t *testing.T) {
	a := startAgent(t)
	team := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	account(t, a.Client, team, "deployer")
	grant(t, a.Client, team, team, "deployer", append(configMapsAll,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"git-credentials"}})...)
	git := gitserver.Start(t, gitserver.Options{Username: "tenant", Password: "s3cret"})
	repo := git.CreateRepo(t, "private")
	head := repo.Commit(t, map[string]string{"apps/a/cm.yaml": configMapYAML("a", "hello"), "apps/b/cm.yaml": configMapYAML("b", "hello")}, "two apps")
	// The platform's Secret holds a password the git server refuses: were it
	// ever sent, git would count a refusal.
	for name, password := range map[string]string{"git-credentials": "s3cret", "platform-credentials": "platform-s3cret"} {
		harness.Must(t, a.Client.Create(t.Context(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: name},
			Data:       map[string][]byte{"username": []byte("tenant"), "password": []byte(password)},
		}))
	}
	spec, err := json.Marshal(map[string]any{
		"source": map[string]any{"url": repo.URL(), "path": "{{path}}", "interval": "1h",
			"secretRef": map[string]any{"name": "git-credentials"}},
		"destination":        map[string]any{"namespace": team},
		"serviceAccountName": "deployer",
	})
	harness.Must(t, err)
	ss := &v1alpha1.SyncSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "private"},
		Spec: v1alpha1.SyncSetSpec{
			Generators: []v1alpha1.SyncSetGenerator{{Git: &v1alpha1.GitGenerator{URL: repo.URL(),
				SecretRef: &v1alpha1.LocalObjectReference{Name: "git-credentials"}, Directories: []v1alpha1.GitDirectory{{Path: "apps/*"}}}}},
			Template: v1alpha1.SyncTemplate{Metadata: v1alpha1.SyncTemplateMeta{Name: "{{path.basename}}"}, Spec: apiextensionsv1.JSON{Raw: spec}},
		},
	}
	harness.Must(t, a.Client.Create(t.Context(), ss))
	removeOnCleanup(t, a, ss)

	syncSetCondition := func(t *testing.T, what string, ok func(c *metav1.Condition) bool) *metav1.Condition {
		t.Helper()
		var got *metav1.Condition
		harness.Eventually(t, waitTimeout, "SyncSet private "+what, func(ctx context.Context) (bool, error) {
			s := &v1alpha1.SyncSet{}
			if err := a.Client.Get(ctx, client.ObjectKeyFromObject(ss), s); err != nil {
				return false, err
			}
			got = apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
			return got != nil && got.ObservedGeneration == s.Generation && ok(got), nil
		})
		return got
	}

	t.Run("a Secret the template's account may read lists the private repository", func(t *testing.T) {
		syncSetCondition(t, "Ready", func(c *metav1.Condition) bool { return c.Status == metav1.ConditionTrue })
		for _, name := range []string{"a", "b"} {
			s := &v1alpha1.Sync{}
			harness.Must(t, a.Client.Get(t.Context(), client.ObjectKey{Namespace: team, Name: name}, s))
			a.WaitApplied(t, s, head)
		}
	})

	t.Run("a Secret the template's account may not read is refused, and git never sees it", func(t *testing.T) {
		cur := &v1alpha1.SyncSet{}
		harness.Must(t, a.Client.Get(t.Context(), client.ObjectKeyFromObject(ss), cur))
		patched := cur.DeepCopy()
		patched.Spec.Generators[0].Git.SecretRef.Name = "platform-credentials"
		harness.Must(t, a.Client.Patch(t.Context(), patched, client.MergeFrom(cur)))
		got := syncSetCondition(t, "Ready False: Forbidden", func(c *metav1.Condition) bool {
			return c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonForbidden
		})
		for _, want := range []string{"Secret " + team + "/platform-credentials", `User "system:serviceaccount:` + team + `:deployer"`, `cannot get resource "secrets"`} {
			if !strings.Contains(got.Message, want) {
				t.Errorf("Ready message %q does not name %q", got.Message, want)
			}
		}
		if strings.Contains(got.Message, "s3cret") || strings.Contains(got.Message, "platform-s3cret") {
			t.Errorf("Ready message holds the password: %q", got.Message)
		}
		l := &v1alpha1.SyncList{}
		harness.Must(t, a.Client.List(t.Context(), l, client.InNamespace(team), client.MatchingLabels{v1alpha1.SyncSetLabel: "private"}))
		if len(l.Items) != 2 {
			t.Errorf("%d Syncs of the SyncSet after the refusal; want both kept", len(l.Items))
		}
		if r := repo.Requests(); r.Refused != 0 {
			t.Errorf("git refused %d requests: the Secret the account may not read reached it (%+v)", r.Refused, r)
		}
	})
}

// removeOnCleanup deletes ss and the Syncs of its namespace when the test
// ends. No garbage collector runs beside the shared control plane: the Syncs
// go by hand, and this agent (stopped after this cleanup) finalizes them; a
// Sync left terminating would be finalized by the next test's agent, its
// requests counted as that test's.
func removeOnCleanup(t *testing.T, a *agent, ss *v1alpha1.SyncSet) {
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		harness.Must(t, client.IgnoreNotFound(a.Client.Delete(ctx, ss)))
		harness.Must(t, a.Client.DeleteAllOf(ctx, &v1alpha1.Sync{}, client.InNamespace(ss.Namespace)))
		harness.Eventually(t, waitTimeout, "the Syncs of "+ss.Namespace+" gone", func(ctx context.Context) (bool, error) {
			l := &v1alpha1.SyncList{}
			err := a.Client.List(ctx, l, client.InNamespace(ss.Namespace))
			return err == nil && len(l.Items) == 0, err
		})
	})
}
