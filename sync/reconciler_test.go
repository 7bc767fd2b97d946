package sync_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/apicount"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
)

func TestConvergedResyncOfAThousandObjectsCostsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("applies 1,000 objects")
	}
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "apps")
	first := repo.Commit(t, apps(250), "250 apps")
	s := a.newSync(t, ns, repo.FileURL())
	if got := a.waitApplied(t, s, first); len(got.Status.Resources) != 1000 || got.Status.Sync != v1alpha1.SyncStatusSynced {
		t.Fatalf("after the first sync: %d resources, sync %s; want 1000, Synced", len(got.Status.Resources), got.Status.Sync)
	}

	t.Run("a converged resync makes no write, no dry-run and no read", func(t *testing.T) {
		a.applies.Reset()
		a.manager.Reset()
		a.reconcile(t, s)
		if got := a.applies.Snapshot(); len(got) != 0 {
			t.Errorf("apply requests = %v, want none", got)
		}
		if got := a.manager.Snapshot(); got.Writes() != 0 {
			t.Errorf("manager requests = %v, want no write (status unchanged)", got)
		}
	})

	t.Run("after one object changes in git, exactly that object is dry-run and applied", func(t *testing.T) {
		second := repo.Commit(t, map[string]string{"apps/app-0042.yaml": app("app-0042", "bonjour")}, "one greeting")
		a.src.Refresh(repo.FileURL()) // what a push webhook does; otherwise the next interval
		a.applies.Reset()
		a.reconcile(t, s)
		path := "/api/v1/namespaces/" + ns + "/configmaps/app-0042"
		for _, kind := range []string{apicount.DryRun, apicount.Patch} {
			if diff := cmp.Diff(map[string]int{path: 1}, a.applies.Paths(kind)); diff != "" {
				t.Errorf("%s requests (-want +got):\n%s", kind, diff)
			}
		}
		if got := a.applies.Snapshot(); got.Writes() != 1 {
			t.Errorf("apply requests = %v, want exactly one write", got)
		}
		a.waitApplied(t, s, second)
	})
}

func TestDriftIsCorrectedByTheWatchWithSelfHeal(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "web")
	commit := repo.Commit(t, apps(1), "one app")
	s := a.newSync(t, ns, repo.FileURL())
	a.waitApplied(t, s, commit)
	a.events()

	// The interval is an hour: only the watch can bring the Sync back here.
	scale(t, a.c, ns, "app-0000", 5)
	eventually(t, "the edit to spec.replicas is reverted", func(ctx context.Context) (bool, error) {
		return replicas(ctx, a.c, ns, "app-0000") == 0, nil
	})
	// The event and the metric follow the write, at the end of the same reconcile.
	var events []string
	eventually(t, "a DriftCorrected event and tether_drift_corrections_total", func(context.Context) (bool, error) {
		events = append(events, a.events()...)
		return strings.Contains(strings.Join(events, "\n"), "DriftCorrected") && counterValue(t, a, "tether_drift_corrections_total") >= 1, nil
	})
}

func TestDriftIsOnlyReportedWithoutSelfHeal(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "web")
	commit := repo.Commit(t, apps(1), "one app")
	s := a.newSync(t, ns, repo.FileURL(), func(s *v1alpha1.Sync) { s.Spec.SelfHeal = ptr.To(false) })
	a.waitApplied(t, s, commit)

	a.applies.Reset()
	scale(t, a.c, ns, "app-0000", 5)
	got := a.waitFor(t, s, "the Sync reports OutOfSync", func(s *v1alpha1.Sync) bool {
		return s.Status.Sync == v1alpha1.SyncStatusOutOfSync
	})
	var drifted []string
	for _, r := range got.Status.Resources {
		if r.Sync == v1alpha1.SyncStatusOutOfSync {
			drifted = append(drifted, r.Kind+"/"+r.Name+": "+r.Message)
		}
	}
	want := []string{"Deployment/app-0000: differs from git in spec.replicas; selfHeal is off"}
	if diff := cmp.Diff(want, drifted); diff != "" {
		t.Errorf("out-of-sync resources (-want +got):\n%s", diff)
	}
	if !isReady(got) {
		t.Errorf("Ready is not True: the revision is applied, only drift is reported (%s)", describe(got))
	}
	if n := replicas(t.Context(), a.c, ns, "app-0000"); n != 5 {
		t.Errorf("replicas = %d, want the edited 5 left alone", n)
	}
	if w := a.applies.Snapshot().Writes(); w != 0 {
		t.Errorf("%d writes to managed objects, want none", w)
	}
}

func TestAnInvalidObjectIsReportedWhileTheRestApply(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "web")
	files := apps(1)
	files["apps/bad.yaml"] = "apiVersion: v1\nkind: Service\nmetadata: {name: bad}\nspec:\n  ports: [{port: 70000}]\n"
	repo.Commit(t, files, "one app and a bad service")
	s := a.newSync(t, ns, repo.FileURL())

	got := a.waitFor(t, s, "the Sync stalls on the bad Service", func(s *v1alpha1.Sync) bool {
		return apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.StalledCondition)
	})
	ready := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
	if ready.Status != "False" || ready.Reason != "ApplyFailed" || !strings.Contains(ready.Message, "Service/"+ns+"/bad") {
		t.Errorf("Ready = %s %s %q, want False ApplyFailed naming Service/%s/bad", ready.Status, ready.Reason, ready.Message, ns)
	}
	for _, r := range got.Status.Resources {
		if wantSynced := r.Name != "bad"; (r.Sync == v1alpha1.SyncStatusSynced) != wantSynced {
			t.Errorf("%s/%s is %s (%s)", r.Kind, r.Name, r.Sync, r.Message)
		}
	}
	cm := &corev1.ConfigMap{}
	if err := a.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "app-0000"}, cm); err != nil {
		t.Errorf("the valid ConfigMap was not applied: %v", err)
	}
}

// scale sets a Deployment's replicas the way `kubectl edit` would: an update by
// another field manager.
func scale(t testing.TB, c client.Client, ns, name string, n int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, d))
	d.Spec.Replicas = ptr.To(n)
	must(t, c.Update(t.Context(), d, client.FieldOwner("kubectl-edit")))
}

func replicas(ctx context.Context, c client.Client, ns, name string) int32 {
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil || d.Spec.Replicas == nil {
		return -1
	}
	return *d.Spec.Replicas
}

func counterValue(t *testing.T, a *agent, name string) float64 {
	t.Helper()
	families, err := a.registry.Gather()
	must(t, err)
	for _, f := range families {
		if f.GetName() == name {
			total := 0.0
			for _, m := range f.GetMetric() {
				total += m.GetCounter().GetValue()
			}
			return total
		}
	}
	return 0
}

func TestAnUnparsableSemverRangeStallsInsteadOfRetrying(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "web")
	repo.Commit(t, apps(1), "one app")
	s := a.newSync(t, ns, repo.FileURL(), func(s *v1alpha1.Sync) { s.Spec.Source.Ref = v1alpha1.GitRef{SemVer: "not a range"} })
	got := a.waitFor(t, s, "the Sync stalls on the range", func(s *v1alpha1.Sync) bool {
		return apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.StalledCondition)
	})
	stalled := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.StalledCondition)
	source := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.SourceReadyCondition)
	if stalled.Reason != "InvalidSemVer" || source == nil || source.Status != "False" || !strings.Contains(stalled.Message, "not a range") {
		t.Errorf("Stalled = %s %q, SourceReady = %+v; want InvalidSemVer naming the range and SourceReady False", stalled.Reason, stalled.Message, source)
	}
}
