package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// TestARestartWithGitDownStillCorrectsDrift restarts the agent (a new container
// in the same pod: the cache directory, an emptyDir, is kept) while its git host
// is down. The new agent cannot ask git, yet it renders the revision the Sync
// applied from its git cache, as its own record of what it applied says, and
// corrects drift from it; nothing is pruned, and the Sync says git is down.
func TestARestartWithGitDownStillCorrectsDrift(t *testing.T) {
	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{})
	repo := git.CreateRepo(t, "deploy")
	front := gitserver.StartFront(t, git)
	applied := repo.Commit(t, configMaps("app", 3), "three config maps")
	cache := t.TempDir()
	kubeconfig := controlplane.Shared(t).KubeconfigPath()
	before := startAgentWith(t, kubeconfig, "--cache-dir", cache, "--git-list-timeout", "2s")
	s := gitSync(ns, "restarted", front.URL("deploy"), "apps", gitFaultInterval)
	createSync(t, c, s)
	waitRevision(t, c, s, applied)
	uids := configMapUIDs(t, c, s)

	before.stop(t, syscall.SIGTERM)
	front.Set(gitserver.Refuse)
	t.Cleanup(func() { front.Set(gitserver.Forward) })
	startAgentWith(t, kubeconfig, "--cache-dir", cache, "--git-list-timeout", "2s")

	waitForSync(t, c, s, "the restarted agent reports git down", func(s *v1alpha1.Sync) bool {
		ready := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
		return ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == source.ReasonHostUnreachable
	})
	driftConfigMapKey(t, c, ns, "app-001", "index", "drifted")
	harness.Eventually(t, waitTimeout, "the drift is corrected from the revision applied before the restart", func(ctx context.Context) (bool, error) {
		cm := &corev1.ConfigMap{}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-001"}, cm)
		return err == nil && cm.Data["index"] == "1", err
	})
	if after := configMapUIDs(t, c, s); len(after) != len(uids) {
		t.Errorf("config maps = %v, want the same as before the restart: %v", after, uids)
	}
	got := &v1alpha1.Sync{}
	harness.Must(t, c.Get(t.Context(), client.ObjectKeyFromObject(s), got))
	if !strings.HasSuffix(got.Status.LastAppliedRevision, applied) {
		t.Errorf("lastAppliedRevision = %s, want %s", got.Status.LastAppliedRevision, applied)
	}

	// Deleted while this agent runs: the cleanups stop it before they would wait
	// for the Sync's finalizer.
	front.Set(gitserver.Forward)
	harness.Must(t, c.Delete(t.Context(), got))
	harness.Eventually(t, waitTimeout, "the Sync to be gone", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(s), &v1alpha1.Sync{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}
