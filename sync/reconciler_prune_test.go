package sync_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/test/apicount"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

func configMap(name string, annotations ...string) string {
	meta := fmt.Sprintf("{name: %s}", name)
	if len(annotations) == 2 {
		meta = fmt.Sprintf("{name: %s, annotations: {%q: %q}}", name, annotations[0], annotations[1])
	}
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: %s\ndata: {owner: %s}\n", meta, name)
}

// pruneEnv is a Sync of a repository of ConfigMaps, applied.
type pruneEnv struct {
	a    *agent
	ns   string
	repo *gitserver.Repo
	sync *v1alpha1.Sync
}

func newPruneEnv(t *testing.T, files map[string]string, mutate ...func(*v1alpha1.Sync)) *pruneEnv {
	t.Helper()
	e := &pruneEnv{a: startAgent(t), ns: controlplane.NewNamespace(t, controlplane.Shared(t).Config()), repo: gitserver.NewLocalRepo(t, "apps")}
	commit := e.repo.Commit(t, files, "initial")
	e.sync = e.a.newSync(t, e.ns, e.repo.FileURL(), mutate...)
	e.a.WaitApplied(t, e.sync, commit)
	return e
}

// push commits files and reconciles at once, as a webhook would make happen.
func (e *pruneEnv) push(t *testing.T, files map[string]string) {
	t.Helper()
	e.repo.Commit(t, files, "change")
	e.a.Source.Refresh(e.repo.FileURL())
	e.a.Reconcile(t, e.sync)
}

func (e *pruneEnv) exists(t *testing.T, name string) bool {
	t.Helper()
	err := e.a.Client.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: name}, &corev1.ConfigMap{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func (e *pruneEnv) inventory(t *testing.T) []string {
	t.Helper()
	s := &v1alpha1.Sync{}
	harness.Must(t, e.a.Client.Get(t.Context(), client.ObjectKeyFromObject(e.sync), s))
	return inventoryNames(t, s)
}

// inventoryNames lists a Sync's inventory as Kind/name.
func inventoryNames(t *testing.T, s *v1alpha1.Sync) []string {
	t.Helper()
	var names []string
	for _, r := range plan.Inventory(s.Status) {
		names = append(names, r.Kind+"/"+r.Name)
	}
	return names
}

// stalledBy waits for a Stalled Sync and returns its Ready condition.
func (e *pruneEnv) stalledBy(t *testing.T, reason string) *metav1.Condition {
	t.Helper()
	s := e.a.WaitFor(t, e.sync, "Stalled by "+reason, func(s *v1alpha1.Sync) bool {
		c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.StalledCondition)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason
	})
	return apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
}

func threeConfigMaps() map[string]string {
	return map[string]string{"apps/a.yaml": configMap("a"), "apps/b.yaml": configMap("b"), "apps/c.yaml": configMap("c")}
}

func TestPruneRemovesWhatLeftGit(t *testing.T) {
	e := newPruneEnv(t, threeConfigMaps())
	e.push(t, map[string]string{"apps/c.yaml": ""})
	harness.Eventually(t, waitTimeout, "c is pruned", func(context.Context) (bool, error) { return !e.exists(t, "c"), nil })
	if !e.exists(t, "a") || !e.exists(t, "b") {
		t.Errorf("a or b was deleted with c")
	}
	if got := e.inventory(t); !slices.Equal(got, []string{"ConfigMap/a", "ConfigMap/b"}) {
		t.Errorf("inventory = %v, want a and b", got)
	}
	if events := strings.Join(e.a.events(), "\n"); !strings.Contains(events, "1 pruned (ConfigMap/"+e.ns+"/c)") {
		t.Errorf("events = %q, want one naming the pruned ConfigMap", events)
	}
}

func TestPruneSurvivesARestart(t *testing.T) {
	e := newPruneEnv(t, threeConfigMaps())
	e.a.Stop()
	e.repo.Commit(t, map[string]string{"apps/b.yaml": ""}, "drop b while the agent is down")

	// A new agent knows nothing but what the API holds: the inventory in status. Its
	// start-up reconciles every Sync.
	e.a = startAgent(t)
	harness.Eventually(t, waitTimeout, "b is pruned by the new agent", func(context.Context) (bool, error) { return !e.exists(t, "b"), nil })
	if !e.exists(t, "a") || !e.exists(t, "c") {
		t.Errorf("a or c was deleted with b")
	}
}

func TestPruneGuards(t *testing.T) {
	t.Run("an emptied path deletes nothing and says how to allow it", func(t *testing.T) {
		e := newPruneEnv(t, threeConfigMaps())
		e.push(t, map[string]string{"apps/a.yaml": "", "apps/b.yaml": "", "apps/c.yaml": "", "apps/README.md": "moved"})
		ready := e.stalledBy(t, "EmptyRender")
		if !strings.Contains(ready.Message, "renders no objects") || !strings.Contains(ready.Message, "spec.allowEmpty: true") {
			t.Errorf("Ready message = %q, want the empty render and spec.allowEmpty explained", ready.Message)
		}
		for _, name := range []string{"a", "b", "c"} {
			if !e.exists(t, name) {
				t.Errorf("%s was deleted by an empty render", name)
			}
		}
	})

	t.Run("with allowEmpty an emptied path prunes everything", func(t *testing.T) {
		e := newPruneEnv(t, threeConfigMaps(), func(s *v1alpha1.Sync) { s.Spec.AllowEmpty = true })
		e.push(t, map[string]string{"apps/a.yaml": "", "apps/b.yaml": "", "apps/c.yaml": "", "apps/README.md": "moved"})
		harness.Eventually(t, waitTimeout, "everything is pruned", func(context.Context) (bool, error) {
			return !e.exists(t, "a") && !e.exists(t, "b") && !e.exists(t, "c"), nil
		})
	})

	t.Run("a broken commit deletes nothing", func(t *testing.T) {
		e := newPruneEnv(t, threeConfigMaps())
		e.push(t, map[string]string{"apps/c.yaml": "", "apps/broken.yaml": "kind: [oops\n"})
		e.stalledBy(t, "RenderFailed")
		if !e.exists(t, "c") {
			t.Errorf("c was pruned although the commit does not render")
		}
	})

	t.Run("pruning more than half the inventory is held back", func(t *testing.T) {
		e := newPruneEnv(t, threeConfigMaps())
		e.push(t, map[string]string{"apps/b.yaml": "", "apps/c.yaml": ""})
		ready := e.stalledBy(t, "PruneLimitExceeded")
		if !strings.Contains(ready.Message, "2 of 3 objects left git") || !strings.Contains(ready.Message, "spec.pruneLimit") {
			t.Errorf("Ready message = %q, want the counts and spec.pruneLimit explained", ready.Message)
		}
		if !e.exists(t, "b") || !e.exists(t, "c") {
			t.Errorf("b or c was deleted although the prune was held back")
		}

		s := &v1alpha1.Sync{}
		harness.Must(t, e.a.Client.Get(t.Context(), client.ObjectKeyFromObject(e.sync), s))
		s.Spec.PruneLimit = ptr.To(intstr.FromString("100%"))
		harness.Must(t, e.a.Client.Update(t.Context(), s))
		harness.Eventually(t, waitTimeout, "b and c are pruned once the limit allows it", func(context.Context) (bool, error) {
			return !e.exists(t, "b") && !e.exists(t, "c"), nil
		})
	})
}

func TestPruneLeavesWhatIsNotTethers(t *testing.T) {
	t.Run("an object annotated tether.dev/prune: disabled stays", func(t *testing.T) {
		files := threeConfigMaps()
		files["apps/keep.yaml"] = configMap("keep", v1alpha1.PruneAnnotation, "disabled")
		e := newPruneEnv(t, files)
		e.push(t, map[string]string{"apps/keep.yaml": ""})
		e.a.WaitFor(t, e.sync, "keep leaves the inventory", func(s *v1alpha1.Sync) bool { return len(plan.Inventory(s.Status)) == 3 })
		if !e.exists(t, "keep") {
			t.Errorf("the protected ConfigMap was deleted")
		}
	})

	t.Run("a second Sync does not take over an object another Sync manages", func(t *testing.T) {
		e := newPruneEnv(t, threeConfigMaps())
		other := e.a.newSync(t, e.ns, e.repo.FileURL(), func(s *v1alpha1.Sync) { s.Name = "other" })
		ready := (&pruneEnv{a: e.a, sync: other}).stalledBy(t, v1alpha1.ReasonValidationFailed)
		want := "already managed by Sync " + e.ns + "/app"
		if !strings.Contains(ready.Message, want) {
			t.Errorf("the second Sync's Ready message = %q, want it to name the owner (%q)", ready.Message, want)
		}
		cm := &corev1.ConfigMap{}
		harness.Must(t, e.a.Client.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: "a"}, cm))
		if got := cm.Annotations[v1alpha1.OwnedByAnnotation]; got != e.ns+"/app" {
			t.Errorf("owned-by = %q, want the first Sync to keep it", got)
		}
	})
}

func TestPruneOrderDeletesCustomResourcesBeforeTheirCRD(t *testing.T) {
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.prune.tether.dev}
spec:
  group: prune.tether.dev
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`
	e := newPruneEnv(t, map[string]string{
		"apps/crd.yaml":    crd,
		"apps/gadget.yaml": "apiVersion: prune.tether.dev/v1\nkind: Gadget\nmetadata: {name: g1}\nspec: {size: 1}\n",
		"apps/a.yaml":      configMap("a"), "apps/b.yaml": configMap("b"), "apps/c.yaml": configMap("c"),
	})
	e.a.applies.Reset()
	e.push(t, map[string]string{"apps/crd.yaml": "", "apps/gadget.yaml": ""})
	harness.Eventually(t, waitTimeout, "the CRD is gone", func(ctx context.Context) (bool, error) {
		gadgets := &unstructured.Unstructured{}
		gadgets.SetAPIVersion("apiextensions.k8s.io/v1")
		gadgets.SetKind("CustomResourceDefinition")
		err := e.a.Client.Get(ctx, client.ObjectKey{Name: "gadgets.prune.tether.dev"}, gadgets)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	deletes := e.a.applies.Log(apicount.Delete)
	want := []string{
		"/apis/prune.tether.dev/v1/namespaces/" + e.ns + "/gadgets/g1",
		"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.prune.tether.dev",
	}
	if !slices.Equal(deletes, want) {
		t.Errorf("deletes in order = %v, want %v", deletes, want)
	}
}

func TestDeletingASync(t *testing.T) {
	t.Run("with deletionPolicy Delete, exactly its objects go and then the Sync", func(t *testing.T) {
		e := newPruneEnv(t, threeConfigMaps())
		bystander := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bystander", Namespace: e.ns}}
		harness.Must(t, e.a.Client.Create(t.Context(), bystander))
		harness.Must(t, e.a.Client.Delete(t.Context(), e.sync))
		harness.Eventually(t, waitTimeout, "the Sync is gone", func(ctx context.Context) (bool, error) {
			err := e.a.Client.Get(ctx, client.ObjectKeyFromObject(e.sync), &v1alpha1.Sync{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
		for _, name := range []string{"a", "b", "c"} {
			if e.exists(t, name) {
				t.Errorf("%s outlived its Sync", name)
			}
		}
		if !e.exists(t, "bystander") {
			t.Errorf("a ConfigMap the Sync never applied was deleted with it")
		}
	})

	t.Run("with deletionPolicy Orphan, objects stay without Tether's marks", func(t *testing.T) {
		e := newPruneEnv(t, threeConfigMaps(), func(s *v1alpha1.Sync) { s.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan })
		harness.Must(t, e.a.Client.Delete(t.Context(), e.sync))
		harness.Eventually(t, waitTimeout, "the Sync is gone", func(ctx context.Context) (bool, error) {
			err := e.a.Client.Get(ctx, client.ObjectKeyFromObject(e.sync), &v1alpha1.Sync{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
		for _, name := range []string{"a", "b", "c"} {
			cm := &corev1.ConfigMap{}
			harness.Must(t, e.a.Client.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: name}, cm))
			if _, ok := cm.Annotations[v1alpha1.OwnedByAnnotation]; ok || cm.Data["owner"] != name {
				t.Errorf("%s: annotations %v, data %v; want the data kept and no owned-by", name, cm.Annotations, cm.Data)
			}
			for _, f := range cm.ManagedFields {
				if f.Manager == "tether" {
					t.Errorf("%s still has a managedFields entry of tether", name)
				}
			}
		}
	})

	t.Run("a deletion that cannot finish says what it waits for", func(t *testing.T) {
		e := newPruneEnv(t, threeConfigMaps())
		held := &corev1.ConfigMap{}
		harness.Must(t, e.a.Client.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: "b"}, held))
		held.Finalizers = []string{"example.com/hold"}
		harness.Must(t, e.a.Client.Update(t.Context(), held))
		harness.Must(t, e.a.Client.Delete(t.Context(), e.sync))
		// The first pass deletes all three; later passes find a and c gone and wait for b.
		s := e.a.WaitFor(t, e.sync, "the Sync waits for b alone", func(s *v1alpha1.Sync) bool {
			return slices.Equal(inventoryNames(t, s), []string{"ConfigMap/b"})
		})
		ready := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
		if ready == nil || ready.Reason != "Deleting" || !strings.Contains(ready.Message, "Waiting for 1 objects to be deleted: ConfigMap/"+e.ns+"/b") {
			t.Errorf("Ready = %+v, want reason Deleting naming ConfigMap/%s/b", ready, e.ns)
		}
		harness.Must(t, e.a.Client.Get(t.Context(), client.ObjectKeyFromObject(held), held))
		held.Finalizers = nil
		harness.Must(t, e.a.Client.Update(t.Context(), held))
		harness.Eventually(t, waitTimeout, "the Sync is gone once b is", func(ctx context.Context) (bool, error) {
			err := e.a.Client.Get(ctx, client.ObjectKeyFromObject(e.sync), &v1alpha1.Sync{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
	})
}
