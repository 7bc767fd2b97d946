package agent

import (
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"tether.dev/tether/api/v1alpha1"
)

// The manager's cache is what the agent reads: trimmed by the transform
// always, confined to the served namespaces and the shard's Syncs when told.
func TestCacheOptions(t *testing.T) {
	t.Run("the whole cluster, trimmed", func(t *testing.T) {
		got := CacheOptions(DefaultOptions())
		if got.DefaultTransform == nil {
			t.Error("no DefaultTransform: the cache would keep every object's managedFields")
		}
		if got.DefaultNamespaces != nil || got.ByObject != nil {
			t.Errorf("namespaces %v, by object %v; want the whole cluster", got.DefaultNamespaces, got.ByObject)
		}
	})
	t.Run("served namespaces and a shard", func(t *testing.T) {
		o := DefaultOptions()
		o.WatchNamespaces = []string{"team-a", "team-b"}
		o.SyncSelector = labels.SelectorFromSet(labels.Set{v1alpha1.ShardLabel: "one"})
		got := CacheOptions(o)
		var namespaces []string
		for ns := range got.DefaultNamespaces {
			namespaces = append(namespaces, ns)
		}
		slices.Sort(namespaces)
		if !slices.Equal(namespaces, []string{"team-a", "team-b"}) {
			t.Errorf("namespaces %v, want team-a and team-b", namespaces)
		}
		for obj, by := range got.ByObject {
			if _, ok := obj.(*v1alpha1.Sync); !ok || by.Label.String() != v1alpha1.ShardLabel+"=one" {
				t.Errorf("by object %T: %v; want Syncs of the shard", obj, by.Label)
			}
		}
		if len(got.ByObject) != 1 {
			t.Errorf("%d objects confined, want Syncs alone", len(got.ByObject))
		}
	})
}

// The Sync controller runs with the last-good directory beside the git cache,
// as `tether controller` always has.
func TestSyncOptionsKeepTheLastGoodBesideTheCache(t *testing.T) {
	o := DefaultOptions()
	o.CacheDir = t.TempDir()
	if got, want := o.syncOptions().LastGoodDir, filepath.Join(o.CacheDir, "last-good"); got != want {
		t.Errorf("LastGoodDir = %q, want %q", got, want)
	}
	if got := o.sourceOptions().CacheDir; got != o.CacheDir {
		t.Errorf("the Source's cache directory = %q, want %q", got, o.CacheDir)
	}
}

// ManagerOptions' scheme reads Syncs and SyncSets typed.
func TestManagerOptionsScheme(t *testing.T) {
	opts, err := ManagerOptions(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"Sync", "SyncSet"} {
		if !opts.Scheme.Recognizes(v1alpha1.GroupVersion.WithKind(kind)) {
			t.Errorf("the scheme does not know %s", kind)
		}
	}
}
