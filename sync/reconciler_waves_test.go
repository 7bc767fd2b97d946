package sync_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// orderedConfigMap is a ConfigMap named name (generated when it ends in "-") with
// annotations given as "key: value" and one datum, value "1".
func orderedConfigMap(name string, annotations ...string) string {
	const value = "1"
	meta := "name: " + name
	if strings.HasSuffix(name, "-") {
		meta = "generateName: " + name
	}
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  %s\n  annotations: {%s}\ndata: {value: %q}\n", meta, strings.Join(annotations, ", "), value)
}

// hookConfigMaps lists the ConfigMaps in ns that Tether created as hooks.
func hookConfigMaps(t *testing.T, a *agent, ns string) []corev1.ConfigMap {
	t.Helper()
	list := &corev1.ConfigMapList{}
	harness.Must(t, a.Client.List(t.Context(), list, client.InNamespace(ns), client.HasLabels{plan.HookLabel}))
	return list.Items
}

// TestHooksStayOutOfTheInventoryAndDriftCorrection: hooks run in a revision's
// run (a generateName one created for it), are neither inventoried nor
// drift-corrected nor run again by drift correction, their delete policies hold,
// and the Sync's deletion removes those left.
func TestHooksStayOutOfTheInventoryAndDriftCorrection(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "web")
	commit := repo.Commit(t, map[string]string{
		"apps/cfg.yaml":    orderedConfigMap("cfg"),
		"apps/early.yaml":  orderedConfigMap("early", "tether.dev/wave: \"-1\""),
		"apps/pre.yaml":    orderedConfigMap("pre-", "argocd.argoproj.io/hook: PreSync"),
		"apps/during.yaml": orderedConfigMap("during", "tether.dev/hook: Sync", "tether.dev/hook-delete-policy: HookSucceeded"),
		"apps/test.yaml":   orderedConfigMap("test", "helm.sh/hook: test"),
	}, "hooks and waves")
	s := a.newSync(t, ns, repo.FileURL())
	got := a.WaitApplied(t, s, commit)

	if inv := plan.Inventory(got.Status); len(inv) != 2 || strings.Contains(fmt.Sprint(inv), "pre-") {
		t.Errorf("inventory %v, want cfg and early alone: hooks are not inventoried", inv)
	}
	hooks := hookConfigMaps(t, a, ns)
	if len(hooks) != 1 || !strings.HasPrefix(hooks[0].Name, "pre-") {
		t.Fatalf("hook ConfigMaps %v, want the PreSync one alone (the Sync hook is HookSucceeded)", cmNames(hooks))
	}
	if len(got.Status.Hooks) != 1 || got.Status.Hooks[0].Name != hooks[0].Name {
		t.Errorf("status.hooks = %+v, want %s", got.Status.Hooks, hooks[0].Name)
	}
	if err := a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "test"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("Helm's test hook: %v, want NotFound: test hooks are skipped", err)
	}

	// Drift: the hook is edited and a managed object deleted. The drift is
	// corrected (the interval is an hour: by the watch), the hook left as it is,
	// and no hook runs again.
	pre := hooks[0]
	pre.Data = map[string]string{"value": "edited"}
	harness.Must(t, a.Client.Update(t.Context(), &pre))
	harness.Must(t, a.Client.Delete(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}}))
	harness.Eventually(t, waitTimeout, "cfg recreated by drift correction", func(ctx context.Context) (bool, error) {
		err := a.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cfg"}, &corev1.ConfigMap{})
		return err == nil, client.IgnoreNotFound(err)
	})
	got = a.WaitApplied(t, s, commit)
	hooks = hookConfigMaps(t, a, ns)
	if len(hooks) != 1 || hooks[0].Data["value"] != "edited" {
		t.Errorf("hooks after drift correction: %v, want the PreSync one, still edited", cmNames(hooks))
	}
	if got.Status.Sync != v1alpha1.SyncStatusSynced {
		t.Errorf("sync = %s, want Synced: an edited hook is not OutOfSync", got.Status.Sync)
	}

	harness.Must(t, a.Client.Delete(t.Context(), got))
	harness.Eventually(t, waitTimeout, "the Sync's deletion removes its hooks", func(context.Context) (bool, error) {
		return len(hookConfigMaps(t, a, ns)) == 0, nil
	})
}

// TestAnOrderThatCannotBeReadOrValidatedWritesNothing: a wave that is no number
// stalls the Sync naming the object; a hook the API server refuses fails the
// dry-run gate with the rest of the revision unwritten.
func TestAnOrderThatCannotBeReadOrValidatedWritesNothing(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "web")
	repo.Commit(t, map[string]string{
		"apps/cfg.yaml":  orderedConfigMap("cfg"),
		"apps/late.yaml": orderedConfigMap("late", "argocd.argoproj.io/sync-wave: soon"),
	}, "a wave that is no number")
	s := a.newSync(t, ns, repo.FileURL(), func(s *v1alpha1.Sync) { s.Spec.Source.Interval.Duration = 2 * time.Second })
	a.WaitFor(t, s, "Stalled with InvalidOrdering", func(s *v1alpha1.Sync) bool {
		c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.StalledCondition)
		return c != nil && c.Reason == v1alpha1.ReasonInvalidOrdering && strings.Contains(c.Message, "ConfigMap/late") && strings.Contains(c.Message, "argocd.argoproj.io/sync-wave")
	})

	repo.Commit(t, map[string]string{
		"apps/late.yaml": orderedConfigMap("late", "argocd.argoproj.io/sync-wave: \"1\""),
		"apps/bad.yaml":  orderedConfigMap("Bad-", "argocd.argoproj.io/hook: PreSync"),
	}, "a hook the API server refuses")
	a.WaitFor(t, s, "Stalled with ValidationFailed naming the hook", func(s *v1alpha1.Sync) bool {
		c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.StalledCondition)
		return c != nil && c.Reason == v1alpha1.ReasonValidationFailed && strings.Contains(c.Message, "ConfigMap/"+ns+"/Bad-")
	})
	for _, name := range []string{"cfg", "late"} {
		if err := a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap %s: %v, want NotFound: nothing is written before the whole revision passed its dry-run", name, err)
		}
	}
}

func cmNames(list []corev1.ConfigMap) []string {
	var out []string
	for _, c := range list {
		out = append(out, c.Name+"="+c.Data["value"])
	}
	return out
}
