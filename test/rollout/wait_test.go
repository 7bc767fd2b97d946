package rollout

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
)

// With spec.wait, Ready waits for the rollout: `kubectl wait --for=condition=Ready`
// returns when the objects are healthy, and fails over to False when one is
// Degraded.
func TestWaitHoldsReadyUntilTheRolloutIsHealthy(t *testing.T) {
	a := startAgent(t, agentOptions{})
	wait := func(s *v1alpha1.Sync) { s.Spec.Wait = true }

	t.Run("Ready is Unknown while the rollout progresses, then True", func(t *testing.T) {
		ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
		repo, commit := startRepo(t, map[string]string{"web.yaml": deployment("1", 2, nil, "minReadySeconds: 2")})
		s := a.newSync(t, ns, repo, wait)
		log := a.recordStatuses(t, s)
		got := a.waitHealth(t, s, commit, v1alpha1.HealthHealthy)
		if c := condition(got.Status, v1alpha1.ReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("Ready = %+v once Healthy, want True", c)
		}
		progressing, ok := log.find(func(st v1alpha1.SyncStatus) bool {
			return strings.HasSuffix(st.LastAppliedRevision, commit) && st.Health == v1alpha1.HealthProgressing
		})
		if !ok {
			t.Fatalf("no status at %.12s said Progressing before Healthy", commit)
		}
		c := condition(progressing, v1alpha1.ReadyCondition)
		if c == nil || c.Status != metav1.ConditionUnknown || c.Reason != v1alpha1.ReasonProgressing || !strings.Contains(c.Message, "Deployment/web") {
			t.Errorf("Ready while Progressing = %+v, want Unknown, Progressing, naming Deployment/web", c)
		}
	})

	t.Run("Ready is False when the rollout is Degraded", func(t *testing.T) {
		ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
		repo, commit := startRepo(t, map[string]string{"web.yaml": deployment("1", 1,
			map[string]string{controlplane.ContainerWaitingAnnotation: "CrashLoopBackOff"})})
		s := a.newSync(t, ns, repo, wait)
		got := a.waitHealth(t, s, commit, v1alpha1.HealthDegraded)
		c := condition(got.Status, v1alpha1.ReadyCondition)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonDegraded || !strings.Contains(c.Message, "CrashLoopBackOff") {
			t.Errorf("Ready while Degraded = %+v, want False, Degraded, naming CrashLoopBackOff", c)
		}
		if c := condition(got.Status, v1alpha1.StalledCondition); c != nil {
			t.Errorf("Stalled = %+v: a Degraded rollout is not a stalled Sync", c)
		}
	})
}
