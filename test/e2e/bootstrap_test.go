package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/test/gitserver"
)

// TestBootstrapLeavesASyncThatManagesTheInstall: `tether bootstrap git` (the
// binary, as a user runs it) against the test git server commits the install
// and creates the Sync tether; the agent, running as the install's account,
// then brings that Sync to Ready at the bootstrap's commit, every object of the
// install in its inventory, nothing deleted or recreated.
func TestBootstrapLeavesASyncThatManagesTheInstall(t *testing.T) {
	c := newClient(t)
	// What the bootstrap installs is what this applies (and removes at the end,
	// but the CRDs and the namespace other tests use).
	in := applyInstall(t, "install.yaml")
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "bootstrap")
	before := liveUIDs(t, c, in)

	res := tether(t, "bootstrap", "git", "--url", repo.URL(), "--path", "clusters/e2e/tether")
	if res.code != 0 {
		t.Fatalf("tether bootstrap git: %s", res)
	}
	head := gitserver.Git(t, repo.Dir(), "rev-parse", "main")
	if !strings.Contains(res.stdout, "git: committed "+head[:12]) {
		t.Errorf("the output does not name the commit %s:\n%s", head, res.stdout)
	}

	startReplica(t, in)
	s := &v1alpha1.Sync{}
	s.Namespace, s.Name = agentNamespace, "tether"
	t.Cleanup(func() {
		// Its deletionPolicy is Orphan: the install stays, and applyInstall removes it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), waitTimeout)
		defer cancel()
		if err := c.Delete(ctx, s); err == nil {
			_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
				return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(s), &v1alpha1.Sync{})), nil
			})
		}
	})
	got := waitForSync(t, c, s, "the bootstrap's Sync Ready at its commit", func(s *v1alpha1.Sync) bool {
		return s.Status.LastAppliedRevision == "main@sha1:"+head && isReady(s)
	})
	if n := len(plan.Inventory(got.Status)); n != len(in.objects) {
		t.Errorf("inventory holds %d objects, want the install's %d", n, len(in.objects))
	}
	sameObjects(t, before, liveUIDs(t, c, in))
}
