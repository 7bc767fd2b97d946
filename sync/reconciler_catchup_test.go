package sync

import (
	"context"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/plan"
	"tether.dev/tether/test/apicount"
	"tether.dev/tether/test/controlplane"
)

// noFinder stands for a Finder; catchUp never calls it.
type noFinder struct{}

func (noFinder) FindOwned(context.Context, apply.FindOptions) ([]v1alpha1.ObjectRef, error) {
	return nil, nil
}

func TestACachedSyncWithoutItsInventoryIsReadAgainBeforeASearch(t *testing.T) {
	cfg := controlplane.Shared(t).Config()
	controlplane.InstallCRDs(t, cfg, filepath.Join("..", "deploy", "base", "crd"))
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reads := &apicount.Counter{}
	c, err := client.New(reads.Wrap(cfg), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	s := &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: controlplane.NewNamespace(t, cfg), Finalizers: []string{v1alpha1.Finalizer}},
		Spec:       v1alpha1.SyncSpec{Source: v1alpha1.SourceSpec{URL: "https://git.example.com/deploy.git", Ref: v1alpha1.GitRef{Branch: "main"}}},
	}
	if err := c.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	// What the cache holds between the finalizer's write and the inventory's.
	cached := s.DeepCopy()
	entry := v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: s.Namespace, Name: "web"}
	plan.SetInventory(&s.Status, []v1alpha1.ObjectRef{entry})
	if err := c.Status().Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Cluster: Cluster{Fresh: c}, Agent: Agent{Finder: noFinder{}}}

	t.Run("a cache behind the agent's own inventory costs one read, not a search", func(t *testing.T) {
		if !r.mustSearch(cached) {
			t.Fatal("the cached copy, with the finalizer and no inventory, would not be searched: nothing to prove")
		}
		before := reads.Snapshot()[apicount.Get]
		got, err := r.catchUp(ctx, cached)
		if err != nil {
			t.Fatal(err)
		}
		if r.mustSearch(got) {
			t.Errorf("the Sync read again, inventory %v, would still be searched", got.Status.Objects)
		}
		if n := reads.Snapshot()[apicount.Get] - before; n != 1 {
			t.Errorf("%d reads, want 1", n)
		}
	})

	t.Run("a Sync whose cached copy has its inventory is not read", func(t *testing.T) {
		before := reads.Snapshot()
		if got, err := r.catchUp(ctx, s); err != nil || got != s {
			t.Errorf("catchUp = %v, %v; want the cached copy itself", got, err)
		}
		if after := reads.Snapshot(); after[apicount.Get] != before[apicount.Get] {
			t.Errorf("reads went from %d to %d", before[apicount.Get], after[apicount.Get])
		}
	})

	t.Run("a wiped status is still searched", func(t *testing.T) {
		s.Status = v1alpha1.SyncStatus{}
		if err := c.Status().Update(ctx, s); err != nil {
			t.Fatal(err)
		}
		got, err := r.catchUp(ctx, cached)
		if err != nil {
			t.Fatal(err)
		}
		if !r.mustSearch(got) {
			t.Error("a Sync whose status was wiped on the API server would not be searched")
		}
	})
}
