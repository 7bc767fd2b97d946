package sync_test

import (
	"context"
	"strings"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// TestASuspendedSyncSaysSoInEveryField: kubectl's columns, tether get and tether
// tree all read the status, so the status alone tells the story of a suspended
// Sync: Ready Unknown for reason Suspended (not the True of its last apply), and
// sync Unknown, since nothing is compared.
func TestASuspendedSyncSaysSoInEveryField(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "web")
	first := repo.Commit(t, map[string]string{"apps/cm.yaml": configMapYAML("web", "hello")}, "web")
	s := a.newSync(t, ns, repo.FileURL())
	a.WaitApplied(t, s, first)

	harness.Eventually(t, waitTimeout, "the Sync is suspended", func(ctx context.Context) (bool, error) {
		cur := &v1alpha1.Sync{}
		if err := a.Client.Get(ctx, client.ObjectKeyFromObject(s), cur); err != nil {
			return false, err
		}
		cur.Spec.Suspend = true
		return true, a.Client.Update(ctx, cur)
	})
	got := a.WaitFor(t, s, "a status of the suspended spec", func(s *v1alpha1.Sync) bool {
		return s.Status.ObservedGeneration == s.Generation
	})
	for _, c := range []struct {
		typ    string
		status metav1.ConditionStatus
	}{{v1alpha1.ReadyCondition, metav1.ConditionUnknown}, {v1alpha1.ReconcilingCondition, metav1.ConditionFalse}} {
		cond := apimeta.FindStatusCondition(got.Status.Conditions, c.typ)
		if cond == nil || cond.Status != c.status || cond.Reason != v1alpha1.ReasonSuspended || cond.ObservedGeneration != got.Generation {
			t.Errorf("%s = %+v, want %s for reason %s at generation %d", c.typ, cond, c.status, v1alpha1.ReasonSuspended, got.Generation)
		}
	}
	if got.Status.Sync != v1alpha1.SyncStatusUnknown {
		t.Errorf("sync = %s, want Unknown: nothing is compared while suspended", got.Status.Sync)
	}
	if !strings.HasSuffix(got.Status.LastAppliedRevision, first) {
		t.Errorf("lastAppliedRevision = %q, want the revision applied before (%s) kept", got.Status.LastAppliedRevision, first)
	}
}
