package rollout

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// versionOf is the version annotation of the Deployment web's pod template.
func (a *agent) versionOf(t *testing.T, ns string) string {
	t.Helper()
	d := &appsv1.Deployment{}
	harness.Must(t, a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web"}, d))
	return d.Spec.Template.Annotations["version"]
}

func TestAnImageThatNeverRollsOutIsRolledBack(t *testing.T) {
	a := startAgent(t, agentOptions{})
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo, first := startRepo(t, map[string]string{"web.yaml": deployment("1", 1, nil)})
	// The Sync polls git every two seconds, to see the commits that follow; a
	// revision has a minute to turn Healthy (a generous bound: the one that fails
	// here turns Degraded at its progress deadline, seconds in).
	s := a.newSync(t, ns, repo, func(s *v1alpha1.Sync) {
		s.Spec.Source.Interval = &metav1.Duration{Duration: 2 * time.Second}
		s.Spec.Rollback = &v1alpha1.RollbackSpec{OnFailure: true, HealthTimeout: &metav1.Duration{Duration: time.Minute}}
	})
	a.waitHealth(t, s, first, v1alpha1.HealthHealthy)

	bad := repo.Commit(t, prefixed(map[string]string{"web.yaml": deployment("2", 1,
		map[string]string{controlplane.NeverReadyAnnotation: "true"}, "progressDeadlineSeconds: 3")}), "An image that never becomes ready")
	t.Run("the revision that turns Degraded is rolled back to the last Healthy one", func(t *testing.T) {
		got := a.WaitFor(t, s, "rolled back to the first commit, Healthy", func(s *v1alpha1.Sync) bool {
			c := condition(s.Status, v1alpha1.RolledBackCondition)
			return c != nil && c.Status == metav1.ConditionTrue && strings.HasSuffix(s.Status.LastAppliedRevision, first) &&
				s.Status.Health == v1alpha1.HealthHealthy
		})
		c := condition(got.Status, v1alpha1.RolledBackCondition)
		if c.Reason != v1alpha1.ReasonDegraded || !strings.Contains(c.Message, bad) || !strings.Contains(c.Message, "ProgressDeadlineExceeded") {
			t.Errorf("RolledBack = %s: %s; want Degraded, naming %s and the progress deadline", c.Reason, c.Message, bad)
		}
		if v := a.versionOf(t, ns); v != "1" {
			t.Errorf("the Deployment is at version %q, want the first commit's 1", v)
		}
		harness.Eventually(t, waitTimeout, "a Warning Event RolledBack naming the failed revision and why", func(_ context.Context) (bool, error) {
			for _, e := range a.events(t, s) {
				if e.Type == corev1.EventTypeWarning && e.Reason == v1alpha1.ReasonRolledBack && strings.Contains(e.Message, bad) &&
					strings.Contains(e.Message, "ProgressDeadlineExceeded") {
					return true, nil
				}
			}
			return false, fmt.Errorf("events: %v", a.events(t, s))
		})
	})

	good := repo.Commit(t, prefixed(map[string]string{"web.yaml": deployment("3", 1, nil)}), "A good image")
	t.Run("the next commit is applied, and the rollback is over", func(t *testing.T) {
		got := a.WaitFor(t, s, "Healthy at the third commit, no rollback", func(s *v1alpha1.Sync) bool {
			return strings.HasSuffix(s.Status.LastAppliedRevision, good) && s.Status.Health == v1alpha1.HealthHealthy &&
				condition(s.Status, v1alpha1.RolledBackCondition) == nil && s.Status.Rollback == nil
		})
		if v := a.versionOf(t, ns); v != "3" {
			t.Errorf("the Deployment is at version %q, want 3", v)
		}
		want := []struct {
			commit string
			health v1alpha1.HealthStatusCode
		}{{good, v1alpha1.HealthHealthy}, {first, v1alpha1.HealthHealthy}, {bad, v1alpha1.HealthDegraded}, {first, v1alpha1.HealthHealthy}}
		h := got.Status.History
		if len(h) != len(want) {
			t.Fatalf("history %+v, want %d entries", h, len(want))
		}
		for i, w := range want {
			if !strings.HasSuffix(h[i].Revision, w.commit) || h[i].Health != w.health {
				t.Errorf("history[%d] = %+v, want %.12s %s", i, h[i], w.commit, w.health)
			}
		}
		if h[0].Message != "A good image" || h[2].Message != "An image that never becomes ready" {
			t.Errorf("history messages %q, %q; want the commits' subjects", h[0].Message, h[2].Message)
		}
	})

	t.Run("a pin rolls the Deployment back by hand, and its removal forward", func(t *testing.T) {
		setPin := func(commit string) {
			cur := &v1alpha1.Sync{}
			harness.Must(t, a.Client.Get(t.Context(), client.ObjectKeyFromObject(s), cur))
			patch := client.MergeFrom(cur.DeepCopy())
			ann := cur.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[v1alpha1.PinRevisionAnnotation] = commit
			if commit == "" {
				delete(ann, v1alpha1.PinRevisionAnnotation)
			}
			cur.SetAnnotations(ann)
			harness.Must(t, a.Client.Patch(t.Context(), cur, patch))
		}
		setPin(first)
		a.WaitFor(t, s, "pinned to the first commit, Healthy", func(s *v1alpha1.Sync) bool {
			c := condition(s.Status, v1alpha1.PinnedCondition)
			return c != nil && c.Status == metav1.ConditionTrue && strings.HasSuffix(s.Status.LastAppliedRevision, first) &&
				strings.HasSuffix(s.Status.SourceRevision, good) && s.Status.Health == v1alpha1.HealthHealthy
		})
		if v := a.versionOf(t, ns); v != "1" {
			t.Errorf("pinned, the Deployment is at version %q, want 1", v)
		}
		setPin("")
		a.WaitFor(t, s, "following the branch again, Healthy", func(s *v1alpha1.Sync) bool {
			return condition(s.Status, v1alpha1.PinnedCondition) == nil && strings.HasSuffix(s.Status.LastAppliedRevision, good) &&
				s.Status.Health == v1alpha1.HealthHealthy
		})
		if v := a.versionOf(t, ns); v != "3" {
			t.Errorf("unpinned, the Deployment is at version %q, want 3", v)
		}
	})
}
