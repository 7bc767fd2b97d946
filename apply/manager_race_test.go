package apply_test

import (
	"context"
	gosync "sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/apply"
	"tether.dev/tether/test/apicount"
	"tether.dev/tether/test/controlplane"
)

// meddling is a client whose first dry-run apply is preceded by another writer's
// change to the object: the deployment controller setting its revision annotation
// between Tether's read and its dry-run, in the middle of a rollout.
type meddling struct {
	client.Client
	other  client.Client
	once   gosync.Once
	target types.NamespacedName
	t      *testing.T
}

func (c *meddling) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if o := (&client.PatchOptions{}).ApplyOptions(opts); len(o.DryRun) > 0 && patch.Type() == types.ApplyPatchType &&
		obj.GetObjectKind().GroupVersionKind().Kind == "ConfigMap" && obj.GetName() == c.target.Name {
		c.once.Do(func() {
			change := []byte(`{"metadata":{"annotations":{"controller.example/revision":"2"}}}`)
			cm := object(c.t, "v1", "ConfigMap", c.target.Namespace, c.target.Name)
			if err := c.other.Patch(ctx, cm, client.RawPatch(types.MergePatchType, change), client.FieldOwner("other-controller")); err != nil {
				c.t.Errorf("the other writer's change: %v", err)
			}
		})
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// An object another writer changes between Tether's read and its dry-run is not
// drift: the comparison is made again on one version of the object, and nothing
// is written.
func TestAnObjectChangedMidCompareIsNotDrift(t *testing.T) {
	e := newEnv(t)
	objs := load(t, "web.yaml")
	if _, err := e.m.ApplyAll(t.Context(), objs, e.opts); err != nil {
		t.Fatal(err)
	}
	counter := &apicount.Counter{}
	counted, err := client.New(counter.Wrap(controlplane.Shared(t).Config()), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := load(t, "web.yaml")[0]
	c := &meddling{Client: counted, other: e.c, target: types.NamespacedName{Namespace: e.ns, Name: cm.GetName()}, t: t}
	// A Manager of its own: nothing verified yet, so every object is read and dry-run.
	m := apply.NewManager(c, apply.ManagerOptions{})
	cs, err := m.ApplyAll(t.Context(), load(t, "web.yaml"), e.opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range cs.Changes {
		if ch.Action != apply.ActionUnchanged {
			t.Errorf("%s: %s (diff %v), want unchanged: another writer's change is not drift", ch.Object, ch.Action, ch.Diff)
		}
	}
	// (A transient failure under load may add a retried request: at least, not exactly.)
	if got := counter.Snapshot(); got[apicount.Patch] != 0 || got[apicount.Get] < 4 || got[apicount.DryRun] < 4 {
		t.Errorf("requests = %v, want no write, and the changed object read and dry-run twice (4 reads and 4 dry-runs at least)", got)
	}
}
