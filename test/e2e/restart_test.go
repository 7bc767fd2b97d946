package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// TestTheAgentSurvivesAnAPIServerRestart restarts kube-apiserver and etcd while the
// agent applies a large revision: without a restart of its own, the agent completes
// the sync, and its watches resume (drift is corrected with a one-hour interval, so
// only a watch can see it).
func TestTheAgentSurvivesAnAPIServerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts the control plane")
	}
	n := 300
	if os.Getenv(faultsFullEnv) == "1" {
		n = 1000
	}
	c := newClient(t)
	cp := controlplane.Shared(t)
	ns := controlplane.NewNamespace(t, cp.Config())
	git := gitserver.Start(t, gitserver.Options{})
	repo := git.CreateRepo(t, "restart")
	commit := repo.Commit(t, configMaps("cm", n), fmt.Sprintf("%d config maps", n))
	a := startAgent(t)
	s := gitSync(ns, "restart", repo.URL(), "apps", time.Hour)
	createSync(t, c, s)
	harness.Eventually(t, waitTimeout, "the sync has begun", func(ctx context.Context) (bool, error) {
		return true, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cm-000"}, &corev1.ConfigMap{})
	})
	if created := len(labelledConfigMaps(t, c, s)); created == n {
		t.Fatalf("all %d objects existed before the restart: this would test nothing", n)
	} else {
		t.Logf("restarting with %d of %d objects created", created, n)
	}
	start := time.Now()
	harness.Must(t, cp.Restart(t.Context()))
	t.Logf("kube-apiserver and etcd were down for %v", time.Since(start).Round(time.Millisecond))

	waitRevision(t, c, s, commit)
	a.running(t)
	t.Logf("the sync of %d objects completed %v after the restart began", n, time.Since(start).Round(time.Millisecond))
	if got := len(labelledConfigMaps(t, c, s)); got != n {
		t.Errorf("%d config maps, want %d", got, n)
	}

	t.Run("watches resume: drift is corrected without an interval", func(t *testing.T) {
		cm := &corev1.ConfigMap{}
		harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "cm-007"}, cm))
		cm.Data["index"] = "edited"
		harness.Must(t, c.Update(t.Context(), cm, client.FieldOwner("kubectl-edit")))
		harness.Eventually(t, waitTimeout, "the edit is reverted", func(ctx context.Context) (bool, error) {
			got := &corev1.ConfigMap{}
			err := c.Get(ctx, client.ObjectKeyFromObject(cm), got)
			return err == nil && got.Data["index"] == "7", err
		})
	})
}
