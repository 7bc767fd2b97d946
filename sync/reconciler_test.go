package sync_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/plan"
	"tether.dev/tether/test/apicount"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/rig"
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
	if got := a.WaitApplied(t, s, first); len(plan.Inventory(got.Status)) != 1000 || got.Status.Sync != v1alpha1.SyncStatusSynced {
		t.Fatalf("after the first sync: %d objects in the inventory, sync %s; want 1000, Synced", len(plan.Inventory(got.Status)), got.Status.Sync)
	}

	t.Run("a converged resync makes no write, no dry-run and no read", func(t *testing.T) {
		// The reconciles the first sync's own writes trigger (by watch) may still be
		// writing status; one more reconcile settles them, and the one after it is
		// the converged resync measured.
		a.Reconcile(t, s)
		a.applies.Reset()
		a.manager.Reset()
		a.Reconcile(t, s)
		if got := a.applies.Snapshot(); len(got) != 0 {
			t.Errorf("apply requests = %v, want none", got)
		}
		// The manager also reconciles Syncs that earlier tests left in the shared
		// cluster (in namespaces being deleted); only this Sync's writes count.
		own := "/namespaces/" + ns + "/syncs/" + s.Name
		for _, kind := range []string{apicount.Patch, apicount.Update, apicount.Create, apicount.Delete} {
			for path, n := range a.manager.Paths(kind) {
				if strings.Contains(path, own) {
					t.Errorf("%d %s of %s, want no write (status unchanged)", n, kind, path)
				}
			}
		}
	})

	t.Run("after one object changes in git, exactly that object is dry-run and applied", func(t *testing.T) {
		second := repo.Commit(t, map[string]string{"apps/app-0042.yaml": app("app-0042", "bonjour")}, "one greeting")
		a.Source.Refresh(repo.FileURL()) // what a push webhook does; otherwise the next interval
		a.applies.Reset()
		a.Reconcile(t, s)
		path := "/api/v1/namespaces/" + ns + "/configmaps/app-0042"
		for _, kind := range []string{apicount.DryRun, apicount.Patch} {
			if diff := cmp.Diff(map[string]int{path: 1}, a.applies.Paths(kind)); diff != "" {
				t.Errorf("%s requests (-want +got):\n%s", kind, diff)
			}
		}
		if got := a.applies.Snapshot(); got.Writes() != 1 {
			t.Errorf("apply requests = %v, want exactly one write", got)
		}
		a.WaitApplied(t, s, second)
	})
}

func TestDriftIsCorrectedByTheWatchWithSelfHeal(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "web")
	commit := repo.Commit(t, apps(1), "one app")
	s := a.newSync(t, ns, repo.FileURL())
	a.WaitApplied(t, s, commit)
	a.events()

	// The interval is an hour: only the watch can bring the Sync back here.
	scale(t, a.Client, ns, "app-0000", 5)
	harness.Eventually(t, waitTimeout, "the edit to spec.replicas is reverted", func(ctx context.Context) (bool, error) {
		return replicas(ctx, a.Client, ns, "app-0000") == 0, nil
	})
	// The event and the metric follow the write, at the end of the same reconcile.
	var events []string
	harness.Eventually(t, waitTimeout, "a DriftCorrected event and tether_drift_corrections_total", func(context.Context) (bool, error) {
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
	a.WaitApplied(t, s, commit)

	a.applies.Reset()
	scale(t, a.Client, ns, "app-0000", 5)
	got := a.WaitFor(t, s, "the Sync reports OutOfSync", func(s *v1alpha1.Sync) bool {
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
	if !rig.IsReady(got) {
		t.Errorf("Ready is not True: the revision is applied, only drift is reported (%s)", harness.Describe(got))
	}
	if n := replicas(t.Context(), a.Client, ns, "app-0000"); n != 5 {
		t.Errorf("replicas = %d, want the edited 5 left alone", n)
	}
	if w := a.applies.Snapshot().Writes(); w != 0 {
		t.Errorf("%d writes to managed objects, want none", w)
	}
}

func TestAnInvalidObjectAmongFortyWritesNothing(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "web")
	first := repo.Commit(t, apps(10), "ten apps")
	s := a.newSync(t, ns, repo.FileURL())
	a.WaitApplied(t, s, first)
	before := configMapVersions(t, a, ns)

	// Forty objects: every ConfigMap changes, two apps are new, and one Service is invalid.
	files := map[string]string{}
	for i := 0; i < 9; i++ {
		files[fmt.Sprintf("apps/app-%04d.yaml", i)] = app(fmt.Sprintf("app-%04d", i), "bonjour")
	}
	files["apps/app-0010.yaml"] = app("app-0010", "new")
	files["apps/app-0009.yaml"] = strings.Replace(app("app-0009", "bonjour"), "port: 80,", "port: 70000,", 1)
	a.applies.Reset()
	repo.Commit(t, files, "nine changed greetings, a new app and a bad port")
	a.Source.Refresh(repo.FileURL())
	a.Reconcile(t, s) // a revision that fails validation stalls the Sync: not an error to retry

	t.Run("nothing of the revision is written", func(t *testing.T) {
		if got := a.applies.Snapshot(); got.Writes() != 0 {
			t.Errorf("requests = %v, want no write (the apiserver's request log: %v)", got, a.applies.Log(apicount.Patch))
		}
		if diff := cmp.Diff(before, configMapVersions(t, a, ns)); diff != "" {
			t.Errorf("ConfigMaps changed (-before +after):\n%s", diff)
		}
	})

	t.Run("the Sync is Stalled with ValidationFailed naming the object", func(t *testing.T) {
		got := a.WaitFor(t, s, "Stalled", func(s *v1alpha1.Sync) bool {
			return apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.StalledCondition)
		})
		ready := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
		bad := "Service/" + ns + "/app-0009"
		if ready.Status != "False" || ready.Reason != v1alpha1.ReasonValidationFailed || !strings.Contains(ready.Message, bad+": dry-run failed") {
			t.Errorf("Ready = %s %s %q, want False ValidationFailed naming %s", ready.Status, ready.Reason, ready.Message, bad)
		}
		if !strings.HasSuffix(got.Status.LastAppliedRevision, first) {
			t.Errorf("lastAppliedRevision = %q, want the last good revision %s", got.Status.LastAppliedRevision, first)
		}
		if msg := resourceMessage(got, "ConfigMap", "app-0010"); !strings.Contains(msg, apply.NoteHeld) {
			t.Errorf("the new ConfigMap's message = %q, want it held: %q", msg, apply.NoteHeld)
		}
	})

	t.Run("the next valid commit applies in full", func(t *testing.T) {
		third := repo.Commit(t, map[string]string{"apps/app-0009.yaml": app("app-0009", "bonjour")}, "fix the port")
		a.Source.Refresh(repo.FileURL())
		a.Reconcile(t, s)
		got := a.WaitApplied(t, s, third)
		if n := len(plan.Inventory(got.Status)); n != 44 {
			t.Errorf("inventory holds %d objects, want 44", n)
		}
		cm := &corev1.ConfigMap{}
		harness.Must(t, a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "app-0010"}, cm))
		if cm.Data["greeting"] != "new" {
			t.Errorf("app-0010 greeting = %q", cm.Data["greeting"])
		}
	})
}

// configMapVersions maps each ConfigMap of ns that Tether manages to its resourceVersion.
func configMapVersions(t *testing.T, a *agent, ns string) map[string]string {
	t.Helper()
	list := &corev1.ConfigMapList{}
	harness.Must(t, a.Client.List(t.Context(), list, client.InNamespace(ns), client.HasLabels{v1alpha1.SyncLabel}))
	out := map[string]string{}
	for _, cm := range list.Items {
		out[cm.Name] = cm.ResourceVersion
	}
	return out
}

// scale sets a Deployment's replicas the way `kubectl edit` would: an update by
// another field manager.
func scale(t testing.TB, c client.Client, ns, name string, n int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, d))
	d.Spec.Replicas = ptr.To(n)
	harness.Must(t, c.Update(t.Context(), d, client.FieldOwner("kubectl-edit")))
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
	families, err := a.Registry.Gather()
	harness.Must(t, err)
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
	got := a.WaitFor(t, s, "the Sync stalls on the range", func(s *v1alpha1.Sync) bool {
		return apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.StalledCondition)
	})
	stalled := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.StalledCondition)
	source := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.SourceReadyCondition)
	if stalled.Reason != "InvalidSemVer" || source == nil || source.Status != "False" || !strings.Contains(stalled.Message, "not a range") {
		t.Errorf("Stalled = %s %q, SourceReady = %+v; want InvalidSemVer naming the range and SourceReady False", stalled.Reason, stalled.Message, source)
	}
}
