package apply_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/apply"
	"tether.dev/tether/test/controlplane"
)

// What a change set keeps of each object is what its caller reads: the live
// object (as JSON, decoded on use), and the dry-run only when nothing is
// written, for `tether diff` to show.
func TestAChangeSetKeepsWhatItsCallerReads(t *testing.T) {
	// A Manager with clients for raw answers (WithClientsFor, as the agent's) keeps
	// a write's answer as the API server sent it, less managedFields; without, it
	// decodes the answer and encodes it again.
	for _, raw := range []bool{false, true} {
		t.Run(fmt.Sprintf("an apply that writes keeps the live objects, without managedFields, and no dry-run (raw answers: %t)", raw), func(t *testing.T) {
			e := newEnv(t)
			if raw {
				opts, err := apply.ManagerOptions{}.WithClientsFor(controlplane.Shared(t).Config())
				if err != nil {
					t.Fatal(err)
				}
				e.m = apply.NewManager(e.c, opts)
			}
			cs, err := e.m.ApplyAll(t.Context(), load(t, "web.yaml"), e.opts)
			if err != nil {
				t.Fatal(err)
			}
			for i, obj := range load(t, "web.yaml") {
				c := cs.Changes[i]
				if c.Desired != nil {
					t.Errorf("%s: the change keeps the dry-run of an object it wrote", c.Object)
				}
				live := decodeLive(t, c)
				want := e.get(t, obj)
				want.SetManagedFields(nil)
				if diff := cmp.Diff(want.Object, live.Object); diff != "" {
					t.Errorf("%s: Live is not the object as the cluster holds it (-cluster +Live):\n%s", c.Object, diff)
				}
				if c.Live.UID() != want.GetUID() {
					t.Errorf("%s: Live.UID() = %q, want %q", c.Object, c.Live.UID(), want.GetUID())
				}
			}
		})
	}

	t.Run("the objects held by a failed validation keep no dry-run", func(t *testing.T) {
		e := newEnv(t)
		objs := load(t, "web.yaml")
		if err := unstructured.SetNestedSlice(objs[1].Object, []any{map[string]any{"port": int64(70000)}}, "spec", "ports"); err != nil {
			t.Fatal(err)
		}
		cs, err := e.m.ApplyAll(t.Context(), objs, e.opts)
		if !apply.IsValidation(err) {
			t.Fatalf("ApplyAll error = %v, want a validation error", err)
		}
		for _, c := range cs.Changes {
			if c.Desired != nil || c.Live != nil {
				t.Errorf("%s (%s): keeps Desired %t, Live %t; want neither of an object that was not written and does not exist", c.Object, c.Action, c.Desired != nil, c.Live != nil)
			}
		}
	})

	t.Run("a dry run keeps what each object would become", func(t *testing.T) {
		e := newEnv(t)
		opts := e.opts
		opts.DryRun = true
		cs, err := e.m.ApplyAll(t.Context(), load(t, "web.yaml"), opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs.Changes {
			if c.Action != apply.ActionCreated || c.Desired == nil || c.Live != nil {
				t.Errorf("%s: %s, Desired %t, Live %t; want created, with the dry-run as Desired and no live object", c.Object, c.Action, c.Desired != nil, c.Live != nil)
				continue
			}
			if c.Desired.GetManagedFields() != nil {
				t.Errorf("%s: Desired keeps its managedFields", c.Object)
			}
		}
	})

	t.Run("an unchanged object is reported from the verified cache as it was written", func(t *testing.T) {
		e := newEnv(t)
		m := apply.NewManager(e.c, apply.ManagerOptions{LiveVersions: apiVersions{c: e.c}})
		first, err := m.ApplyAll(t.Context(), load(t, "web.yaml"), e.opts)
		if err != nil {
			t.Fatal(err)
		}
		again, err := m.ApplyAll(t.Context(), load(t, "web.yaml"), e.opts)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range again.Changes {
			if c.Action != apply.ActionUnchanged {
				t.Fatalf("%s: %s, want unchanged", c.Object, c.Action)
			}
			if diff := cmp.Diff(decodeLive(t, first.Changes[i]).Object, decodeLive(t, c).Object); diff != "" {
				t.Errorf("%s: the verified live object differs from the one written (-written +verified):\n%s", c.Object, diff)
			}
		}
	})
}

// decodeLive decodes c's live object, which must be there.
func decodeLive(t *testing.T, c apply.Change) *unstructured.Unstructured {
	t.Helper()
	if c.Live == nil {
		t.Fatalf("%s (%s): no live object", c.Object, c.Action)
	}
	live, err := c.Live.Decode()
	if err != nil {
		t.Fatalf("%s: %v", c.Object, err)
	}
	if live.GetManagedFields() != nil {
		t.Errorf("%s: Live keeps its managedFields", c.Object)
	}
	return live
}
