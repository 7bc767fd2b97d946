package e2e

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// gitFaultInterval is the Sync's interval in the git fault tests: recovery is
// expected within two of them.
const gitFaultInterval = 3 * time.Second

// TestGitFaultsKeepTheLastGoodState puts the git host through the failures real
// hosts have: down (connection refused), silent (accepts and never answers), the
// branch deleted, the repository deleted, the branch force-pushed to an older
// commit; and a commit that does not render. In each case the Sync names the cause in its Ready condition, the cluster
// keeps the last good revision with no object deleted (the same UIDs throughout),
// drift is still corrected from that revision while git cannot be asked, and the
// Sync is Ready again on its own when git is back, within two intervals.
func TestGitFaultsKeepTheLastGoodState(t *testing.T) {
	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{})
	repo := git.CreateRepo(t, "deploy")
	front := gitserver.StartFront(t, git)
	first := repo.Commit(t, configMaps("app", 3), "three config maps")
	second := repo.Commit(t, configMaps("app", 6), "three more config maps")
	startAgentWith(t, controlplane.Shared(t).KubeconfigPath(), "--git-list-timeout", "2s")
	s := gitSync(ns, "git-faults", front.URL("deploy"), "apps", gitFaultInterval)
	createSync(t, c, s)
	waitRevision(t, c, s, second)
	uids := configMapUIDs(t, c, s)
	if len(uids) != 6 {
		t.Fatalf("config maps = %v, want the six of %s", uids, second)
	}

	for i, fault := range []struct {
		name   string
		reason string
		inject func() (heal func())
	}{
		{"the host is down", source.ReasonHostUnreachable, func() func() {
			front.Set(gitserver.Refuse)
			return func() { front.Set(gitserver.Forward) }
		}},
		{"the host accepts and never answers", source.ReasonHostUnreachable, func() func() {
			front.Set(gitserver.Hang)
			return func() { front.Set(gitserver.Forward) }
		}},
		{"the branch is deleted", source.ReasonRefNotFound, func() func() {
			repo.DeleteBranch(t, "main")
			return func() { repo.ForcePush(t, second) }
		}},
		{"the repository is deleted", source.ReasonRepositoryNotFound, func() func() {
			return repo.Hide(t)
		}},
		{"the branch is force-pushed to an older commit", source.ReasonHistoryRewritten, func() func() {
			repo.ForcePush(t, first)
			return func() { repo.ForcePush(t, second) }
		}},
		{"a commit that does not render", v1alpha1.ReasonRenderFailed, func() func() {
			repo.Commit(t, map[string]string{"apps/broken.yaml": "kind: [ConfigMap\n"}, "a broken file")
			return func() { repo.ForcePush(t, second) }
		}},
	} {
		t.Run(fault.name, func(t *testing.T) {
			heal, healed := fault.inject(), false
			defer func() {
				if !healed { // a failed step must not leave the fault for the next case
					heal()
				}
			}()
			got := waitForSync(t, c, s, "the Sync reports "+fault.reason, func(s *v1alpha1.Sync) bool {
				ready := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
				return ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == fault.reason
			})
			t.Logf("Ready: %s", apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition).Message)

			// Each case drifts another object: three corrections of one field within
			// minutes are a fight, which Tether gives up.
			drifted := fmt.Sprintf("app-%03d", i)
			driftConfigMapKey(t, c, ns, drifted, "index", "drifted")
			harness.Eventually(t, waitTimeout, "the drift is corrected from the last good revision", func(ctx context.Context) (bool, error) {
				cm := &corev1.ConfigMap{}
				err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: drifted}, cm)
				return err == nil && cm.Data["index"] == strconv.Itoa(i), err
			})
			if after := configMapUIDs(t, c, s); !maps.Equal(after, uids) {
				t.Errorf("config maps = %v, want the same objects as before the fault: %v", after, uids)
			}
			cur := &v1alpha1.Sync{}
			harness.Must(t, c.Get(t.Context(), client.ObjectKeyFromObject(s), cur))
			if !strings.HasSuffix(cur.Status.LastAppliedRevision, second) {
				t.Errorf("lastAppliedRevision = %s, want the last good %s", cur.Status.LastAppliedRevision, second)
			}

			healedAt := time.Now()
			heal()
			healed = true
			waitForSync(t, c, s, "the Sync is Ready again", func(s *v1alpha1.Sync) bool {
				return isReady(s) && apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.SourceReadyCondition)
			})
			took := time.Since(healedAt)
			t.Logf("Ready again %s after git was back (interval %s)", took.Round(time.Millisecond), gitFaultInterval)
			// The bound tells a retry at the interval from an exponential backoff grown
			// during the fault (minutes); the slack is for a loaded machine.
			if bound := 2*gitFaultInterval + 10*time.Second; took > bound {
				t.Errorf("recovery took %s, want within two intervals (%s with slack)", took, bound)
			}
		})
	}

	t.Run("an accepted older commit is applied, and prunes what it lacks", func(t *testing.T) {
		repo.ForcePush(t, first)
		waitForSync(t, c, s, "the rewrite is held", func(s *v1alpha1.Sync) bool {
			return apimeta.IsStatusConditionPresentAndEqual(s.Status.Conditions, v1alpha1.ReadyCondition, metav1.ConditionFalse) &&
				apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition).Reason == source.ReasonHistoryRewritten
		})
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AcceptRevisionAnnotation, first)
		harness.Must(t, c.Patch(t.Context(), &v1alpha1.Sync{ObjectMeta: s.ObjectMeta}, client.RawPatch(types.MergePatchType, patch)))
		waitRevision(t, c, s, first)
		if got := labelledConfigMaps(t, c, s); strings.Join(got, ",") != "app-000,app-001,app-002" {
			t.Errorf("config maps = %v, want the three of %s", got, first)
		}
	})
}

// TestRotatedCredentialsAreUsedAtOnce rotates the git host's password and then the
// Secret a Sync reads it from: the Sync, whose interval is an hour, is Ready at the
// new commit as soon as the Secret changes (the agent watches the Secret), with no
// restart and no backoff to wait out.
func TestRotatedCredentialsAreUsedAtOnce(t *testing.T) {
	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{Username: gitUser, Password: "before-rotation"})
	repo := git.CreateRepo(t, "private")
	first := repo.Commit(t, configMaps("app", 1), "one config map")
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git-credentials"},
		Data:       map[string][]byte{"username": []byte(gitUser), "password": []byte("before-rotation")},
	}
	create(t, c, secret)
	startAgent(t)
	s := gitSync(ns, "rotation", repo.URL(), "apps", time.Hour)
	s.Spec.Source.SecretRef = &v1alpha1.LocalObjectReference{Name: secret.Name}
	createSync(t, c, s)
	waitRevision(t, c, s, first)

	git.SetPassword("after-rotation")
	second := repo.Commit(t, configMaps("app", 2), "a second config map")
	requested := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, "tether.dev/reconcile-requested-at", time.Now().Format(time.RFC3339Nano))
	harness.Must(t, c.Patch(t.Context(), &v1alpha1.Sync{ObjectMeta: s.ObjectMeta}, client.RawPatch(types.MergePatchType, requested)))
	waitForSync(t, c, s, "the old password is refused", func(s *v1alpha1.Sync) bool {
		ready := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
		return ready != nil && ready.Reason == source.ReasonAuthenticationFailed
	})

	rotated := time.Now()
	secret.Data["password"] = []byte("after-rotation")
	harness.Must(t, c.Update(t.Context(), secret))
	waitRevision(t, c, s, second)
	t.Logf("Ready at the new commit %s after the Secret was rotated (interval 1h)", time.Since(rotated).Round(time.Millisecond))
}

// configMapUIDs maps the ConfigMaps that carry Sync s's label to their UIDs: an
// object deleted and created again has another.
func configMapUIDs(t *testing.T, c client.Client, s *v1alpha1.Sync) map[string]types.UID {
	t.Helper()
	uids := map[string]types.UID{}
	for _, cm := range syncConfigMaps(t, c, s) {
		uids[cm.Name] = cm.UID
	}
	return uids
}
