package sync_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/rig"
)

// setPin sets (or, with "", removes) the pin annotation of s.
func (a *agent) setPin(t *testing.T, s *v1alpha1.Sync, commit string) {
	t.Helper()
	cur := &v1alpha1.Sync{}
	harness.Must(t, a.Client.Get(t.Context(), client.ObjectKeyFromObject(s), cur))
	patch := client.MergeFrom(cur.DeepCopy())
	ann := cur.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	if commit == "" {
		delete(ann, v1alpha1.PinRevisionAnnotation)
	} else {
		ann[v1alpha1.PinRevisionAnnotation] = commit
	}
	cur.SetAnnotations(ann)
	harness.Must(t, a.Client.Patch(t.Context(), cur, patch))
}

func hasCondition(s *v1alpha1.Sync, typ, reason string) bool {
	c := apimeta.FindStatusCondition(s.Status.Conditions, typ)
	return c != nil && c.Status == metav1.ConditionTrue && (reason == "" || c.Reason == reason)
}

func TestAPinAppliesItsCommitUntilItIsRemoved(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "apps")
	first := repo.Commit(t, map[string]string{"apps/cm.yaml": configMapYAML("web", "one")}, "one")
	// An hour between polls: the pin's changes are seen by the watch of Syncs,
	// new commits through requests for a reconcile.
	s := a.newSync(t, ns, repo.FileURL())
	a.WaitApplied(t, s, first)
	second := repo.Commit(t, map[string]string{"apps/cm.yaml": configMapYAML("web", "two"), "apps/extra.yaml": configMapYAML("extra", "x")}, "two")
	requestReconcile(t, a, s)
	a.WaitApplied(t, s, second)

	t.Run("pinned, the Sync applies the pinned commit and reports git's", func(t *testing.T) {
		a.setPin(t, s, first)
		got := a.WaitFor(t, s, "pinned at the first commit", func(s *v1alpha1.Sync) bool {
			return strings.HasSuffix(s.Status.LastAppliedRevision, first) && rig.IsReady(s) && hasCondition(s, v1alpha1.PinnedCondition, v1alpha1.ReasonPinned)
		})
		if g := configMapData(t, a, ns, "web"); g != "one" {
			t.Errorf("ConfigMap web says %q, want the pinned commit's %q", g, "one")
		}
		if err := a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "extra"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("the ConfigMap the pinned commit does not hold: %v, want it pruned", err)
		}
		if !strings.HasSuffix(got.Status.SourceRevision, second) {
			t.Errorf("sourceRevision = %s, want git's newest, %s", got.Status.SourceRevision, second)
		}
		if h := got.Status.History; len(h) < 3 || !strings.HasSuffix(h[0].Revision, first) {
			t.Errorf("history %+v, want the pinned commit applied again as the newest entry", h)
		}
	})

	third := repo.Commit(t, map[string]string{"apps/cm.yaml": configMapYAML("web", "three")}, "three")
	requestReconcile(t, a, s)
	t.Run("a new commit is reported, not applied, while pinned", func(t *testing.T) {
		a.WaitFor(t, s, "git's newest reported", func(s *v1alpha1.Sync) bool {
			return strings.HasSuffix(s.Status.SourceRevision, third)
		})
		if g := configMapData(t, a, ns, "web"); g != "one" {
			t.Errorf("ConfigMap web says %q while pinned, want %q", g, "one")
		}
	})

	t.Run("a pin that is no commit hash stalls the Sync and keeps the cluster", func(t *testing.T) {
		a.setPin(t, s, "HEAD~1")
		got := a.WaitFor(t, s, "Stalled, PinInvalid", func(s *v1alpha1.Sync) bool {
			return hasCondition(s, v1alpha1.StalledCondition, v1alpha1.ReasonPinInvalid)
		})
		if c := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition); c == nil || !strings.Contains(c.Message, v1alpha1.PinRevisionAnnotation) {
			t.Errorf("Ready = %+v, want it to name the annotation", c)
		}
		if g := configMapData(t, a, ns, "web"); g != "one" {
			t.Errorf("ConfigMap web says %q, want it kept at %q", g, "one")
		}
	})

	t.Run("without the pin, the Sync follows its ref again", func(t *testing.T) {
		a.setPin(t, s, "")
		got := a.WaitApplied(t, s, third)
		if hasCondition(got, v1alpha1.PinnedCondition, "") {
			t.Errorf("still Pinned: %s", harness.Describe(got))
		}
		if g := configMapData(t, a, ns, "web"); g != "three" {
			t.Errorf("ConfigMap web says %q, want %q", g, "three")
		}
	})
}

// stuckDeployment never rolls out on a control plane without controllers.
func stuckDeployment(name string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec: {containers: [{name: app, image: "registry.k8s.io/pause:3.10"}]}
`, name)
}

func TestARevisionNotHealthyInTimeIsRolledBack(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "apps")
	good := repo.Commit(t, map[string]string{"apps/cm.yaml": configMapYAML("web", "one")}, "good")
	s := a.newSync(t, ns, repo.FileURL(), pollEverySecond, func(s *v1alpha1.Sync) {
		s.Spec.Rollback = &v1alpha1.RollbackSpec{OnFailure: true, HealthTimeout: &metav1.Duration{Duration: 3 * time.Second}}
	})
	a.WaitApplied(t, s, good)
	bad := repo.Commit(t, map[string]string{"apps/web.yaml": stuckDeployment("web"), "apps/cm.yaml": configMapYAML("web", "two")}, "a rollout that never ends")

	var got *v1alpha1.Sync
	t.Run("the revision not Healthy in time is rolled back to the last Healthy one", func(t *testing.T) {
		got = a.WaitFor(t, s, "rolled back to the good commit", func(s *v1alpha1.Sync) bool {
			return hasCondition(s, v1alpha1.RolledBackCondition, v1alpha1.ReasonHealthTimeout) &&
				strings.HasSuffix(s.Status.LastAppliedRevision, good) && rig.IsReady(s)
		})
		c := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.RolledBackCondition)
		if !strings.Contains(c.Message, bad) || !strings.Contains(c.Message, "not Healthy within 3s") {
			t.Errorf("RolledBack says %q, want it to name %s and the timeout", c.Message, bad)
		}
		if got.Status.Rollback == nil || !strings.HasSuffix(got.Status.Rollback.FailedRevision, bad) {
			t.Errorf("status.rollback = %+v, want the failed revision", got.Status.Rollback)
		}
		if g := configMapData(t, a, ns, "web"); g != "one" {
			t.Errorf("ConfigMap web says %q, want the good commit's %q", g, "one")
		}
		err := a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web"}, &appsv1.Deployment{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("the failed revision's Deployment: %v, want it pruned", err)
		}
		var warned bool
		for _, e := range a.events() {
			warned = warned || strings.HasPrefix(e, "Warning RolledBack") && strings.Contains(e, bad)
		}
		if !warned {
			t.Error("no Warning Event RolledBack naming the failed revision")
		}
		if n := a.rollbacks(t, ns, v1alpha1.ReasonHealthTimeout); n != 1 {
			t.Errorf("tether_rollbacks_total{reason=HealthTimeout} = %v, want 1", n)
		}
	})

	t.Run("the failed revision is not tried again while git still names it", func(t *testing.T) {
		for range 3 {
			a.Reconcile(t, s)
		}
		now := &v1alpha1.Sync{}
		harness.Must(t, a.Client.Get(t.Context(), client.ObjectKeyFromObject(s), now))
		if !strings.HasSuffix(now.Status.LastAppliedRevision, good) || !strings.HasSuffix(now.Status.SourceRevision, bad) {
			t.Errorf("applied %s (git at %s), want the good commit kept while git names the failed one", now.Status.LastAppliedRevision, now.Status.SourceRevision)
		}
		h := now.Status.History
		if len(h) != 3 || !strings.HasSuffix(h[1].Revision, bad) || h[1].Health == v1alpha1.HealthHealthy {
			t.Errorf("history %+v, want the good commit again, the failed one, the good one", h)
		}
	})

	fixed := repo.Commit(t, map[string]string{"apps/web.yaml": "", "apps/cm.yaml": configMapYAML("web", "three")}, "fixed")
	t.Run("the next commit is applied and the rollback is over", func(t *testing.T) {
		got := a.WaitApplied(t, s, fixed)
		harness.Eventually(t, waitTimeout, "the RolledBack condition gone", func(ctx context.Context) (bool, error) {
			harness.Must(t, a.Client.Get(ctx, client.ObjectKeyFromObject(s), got))
			return !hasCondition(got, v1alpha1.RolledBackCondition, "") && got.Status.Rollback == nil, nil
		})
		if g := configMapData(t, a, ns, "web"); g != "three" {
			t.Errorf("ConfigMap web says %q, want %q", g, "three")
		}
	})
}

// rollbacks is tether_rollbacks_total of the Syncs of namespace ns for reason.
func (a *agent) rollbacks(t *testing.T, ns, reason string) float64 {
	t.Helper()
	families, err := a.Registry.Gather()
	harness.Must(t, err)
	var n float64
	for _, f := range families {
		if f.GetName() != "tether_rollbacks_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == ns && labels["reason"] == reason {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}
