package sync_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/rig"
)

func TestAStatusConflictMergesWithTheNewestCopy(t *testing.T) {
	// With prune off, an entry for an object that is not in git stays in the
	// inventory; only an overwrite can remove it.
	e := newPruneEnv(t, threeConfigMaps(), func(s *v1alpha1.Sync) { s.Spec.Prune = ptr.To(false) })
	elsewhere := v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: e.ns, Name: "recorded-elsewhere"}

	t.Run("an inventory entry another writer added during the reconcile is kept", func(t *testing.T) {
		hook := func() {
			cur := &v1alpha1.Sync{}
			harness.Must(t, e.a.Client.Get(context.WithoutCancel(t.Context()), client.ObjectKeyFromObject(e.sync), cur))
			plan.SetInventory(&cur.Status, append(plan.Inventory(cur.Status), elsewhere))
			harness.Must(t, e.a.Client.Status().Update(context.WithoutCancel(t.Context()), cur))
		}
		e.a.hooked.hook.Store(&hook)
		e.push(t, map[string]string{"apps/a.yaml": configMap("a", "note", "changed")})
		got := &v1alpha1.Sync{}
		harness.Must(t, e.a.Client.Get(t.Context(), client.ObjectKeyFromObject(e.sync), got))
		if inv := plan.Inventory(got.Status); !slices.Contains(inv, elsewhere) {
			t.Errorf("inventory = %v: the entry written by another writer was overwritten", inv)
		}
		if e.a.hooked.hook.Load() != nil {
			t.Fatalf("the hook never ran: no conflict was provoked")
		}
	})

	t.Run("a spec changed during the reconcile is reconciled next", func(t *testing.T) {
		var generation int64
		hook := func() {
			cur := &v1alpha1.Sync{}
			harness.Must(t, e.a.Client.Get(context.WithoutCancel(t.Context()), client.ObjectKeyFromObject(e.sync), cur))
			cur.Spec.IgnoreDifferences = append(cur.Spec.IgnoreDifferences, v1alpha1.IgnoreRule{Kind: "ConfigMap", JSONPointers: []string{"/data/note"}})
			harness.Must(t, e.a.Client.Update(context.WithoutCancel(t.Context()), cur))
			generation = cur.Generation
		}
		e.a.hooked.hook.Store(&hook)
		e.push(t, map[string]string{"apps/b.yaml": configMap("b", "note", "changed")})
		e.a.WaitFor(t, e.sync, "status observes the newest spec", func(s *v1alpha1.Sync) bool {
			return generation > 1 && s.Status.ObservedGeneration == generation && rig.IsReady(s)
		})
	})
}

func TestAWipedInventoryIsRebuiltFromTheLabel(t *testing.T) {
	e := newPruneEnv(t, threeConfigMaps())
	s := &v1alpha1.Sync{}
	harness.Must(t, e.a.Client.Get(t.Context(), client.ObjectKeyFromObject(e.sync), s))
	s.Status = v1alpha1.SyncStatus{} // as a restore from a backup without status would leave it
	harness.Must(t, e.a.Client.Status().Update(t.Context(), s))

	e.push(t, map[string]string{"apps/c.yaml": ""})
	harness.Eventually(t, waitTimeout, "c is pruned", func(context.Context) (bool, error) { return !e.exists(t, "c"), nil })
	if got := e.inventory(t); !slices.Equal(got, []string{"ConfigMap/a", "ConfigMap/b"}) {
		t.Errorf("inventory = %v, want a and b", got)
	}
	if !hasEvent(e.a.events(), v1alpha1.ReasonInventoryRebuilt, "rebuilt it from 3 objects") {
		t.Errorf("no %s event for the three objects found by label", v1alpha1.ReasonInventoryRebuilt)
	}
}

func TestAnUpgradedAgentReadsTheInventoryAnOlderOneWrote(t *testing.T) {
	e := newPruneEnv(t, threeConfigMaps())
	e.a.Stop()
	// What an agent from before status.objects left: one id per object in
	// status.inventory.
	s := &v1alpha1.Sync{}
	harness.Must(t, e.a.Client.Get(t.Context(), client.ObjectKeyFromObject(e.sync), s))
	var ids []string
	for _, r := range plan.Inventory(s.Status) {
		ids = append(ids, r.ID())
	}
	s.Status.Objects, s.Status.LegacyInventory = nil, ids
	harness.Must(t, e.a.Client.Status().Update(t.Context(), s))
	// c loses its label: only the old inventory still knows it, no search would find it.
	c := &corev1.ConfigMap{}
	harness.Must(t, e.a.Client.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: "c"}, c))
	delete(c.Labels, v1alpha1.SyncLabel)
	harness.Must(t, e.a.Client.Update(t.Context(), c))
	second := e.repo.Commit(t, map[string]string{"apps/c.yaml": ""}, "drop c while the agent is upgraded")

	e.a = startAgent(t)
	e.a.WaitApplied(t, e.sync, second)
	harness.Eventually(t, waitTimeout, "c is pruned", func(context.Context) (bool, error) { return !e.exists(t, "c"), nil })
	if !e.exists(t, "a") || !e.exists(t, "b") {
		t.Errorf("a or b was deleted with c")
	}
	got := e.a.WaitFor(t, e.sync, "the inventory moved to status.objects", func(s *v1alpha1.Sync) bool {
		return s.Status.LegacyInventory == nil && len(s.Status.Objects) > 0
	})
	if names := inventoryNames(t, got); !slices.Equal(names, []string{"ConfigMap/a", "ConfigMap/b"}) {
		t.Errorf("inventory = %v, want a and b", names)
	}
}

func TestAVanishedKindNeverBlocks(t *testing.T) {
	a := startAgent(t)
	cfg := controlplane.Shared(t).Config()
	ns := controlplane.NewNamespace(t, cfg)
	crd := widgetCRD(ns)
	harness.Must(t, a.Client.Create(t.Context(), crd))
	harness.Eventually(t, waitTimeout, "the Widget CRD is established", func(ctx context.Context) (bool, error) {
		return true, a.Client.List(ctx, widgets(crd))
	})
	repo := gitserver.NewLocalRepo(t, "apps")
	first := repo.Commit(t, map[string]string{
		"apps/a.yaml":      configMap("a"),
		"apps/widget.yaml": "apiVersion: " + crd.Spec.Group + "/v1\nkind: Widget\nmetadata: {name: w}\n",
	}, "a config map and a widget")
	s := a.newSync(t, ns, repo.FileURL())
	if got := inventoryNames(t, a.WaitApplied(t, s, first)); !slices.Equal(got, []string{"ConfigMap/a", "Widget/w"}) {
		t.Fatalf("inventory = %v, want ConfigMap/a and Widget/w", got)
	}

	// The CRD is deleted out of band while no agent runs; the next agent has never seen its kind.
	a.Stop()
	harness.Must(t, a.Client.Delete(t.Context(), crd))
	harness.Eventually(t, waitTimeout, "the Widget kind is gone", func(ctx context.Context) (bool, error) {
		err := a.Client.Get(ctx, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	b := startAgent(t)

	second := repo.Commit(t, map[string]string{"apps/widget.yaml": ""}, "remove the widget")
	b.Source.Refresh(repo.FileURL())
	b.Reconcile(t, s)
	got := b.WaitApplied(t, s, second)
	if names := inventoryNames(t, got); !slices.Equal(names, []string{"ConfigMap/a"}) {
		t.Errorf("inventory = %v, want only ConfigMap/a", names)
	}
	if !hasEvent(b.events(), v1alpha1.ReasonKindVanished, "Widget/"+ns+"/w") {
		t.Errorf("no %s event naming the widget", v1alpha1.ReasonKindVanished)
	}

	t.Run("and deleting the Sync completes", func(t *testing.T) {
		harness.Must(t, b.Client.Delete(t.Context(), s))
		harness.Eventually(t, waitTimeout, "the Sync is gone", func(ctx context.Context) (bool, error) {
			err := b.Client.Get(ctx, client.ObjectKeyFromObject(s), &v1alpha1.Sync{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
	})
}

func hasEvent(events []string, reason, text string) bool {
	for _, e := range events {
		if strings.Contains(e, " "+reason+" ") && strings.Contains(e, text) {
			return true
		}
	}
	return false
}

// widgetCRD is a namespaced kind Widget in a group of its own for the test.
func widgetCRD(ns string) *apiextensionsv1.CustomResourceDefinition {
	group := ns + ".test.tether.dev"
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptrTrue(),
				}},
			}},
		},
	}
}

func widgets(crd *apiextensionsv1.CustomResourceDefinition) *unstructured.UnstructuredList {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(crd.Spec.Group + "/v1")
	list.SetKind("WidgetList")
	return list
}

func ptrTrue() *bool { b := true; return &b }
