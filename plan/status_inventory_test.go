package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply/contract"
)

// maxStatus is what a Sync's status may take at most: half of etcd's default
// request limit (1.5 MiB), leaving room for spec, metadata and managedFields.
const maxStatus = 768 << 10

// tenThousand is a change set of 10,000 ConfigMaps with names of ordinary length,
// spread over ten namespaces, of which the first failed ones failed with a message
// of msgBytes.
func tenThousand(failed, msgBytes int) *contract.ChangeSet {
	cs := &contract.ChangeSet{}
	msg := strings.Repeat("admission webhook \"policy.example.com\" denied the request: ", msgBytes/60+1)[:msgBytes]
	for i := 0; i < 10000; i++ {
		c := contract.Change{
			Object: v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: fmt.Sprintf("team-%02d", i%10), Name: fmt.Sprintf("app-%05d-config", i)},
			Action: contract.ActionUnchanged,
		}
		if i < failed {
			c.Action = contract.ActionFailed
			c.Err = fmt.Errorf("%s: dry-run failed: %s", c.Object, msg) // as apply.ObjectError writes it
		}
		cs.Changes = append(cs.Changes, c)
	}
	return cs
}

func statusBytes(t *testing.T, st v1alpha1.SyncStatus) int {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

func TestTheStatusOfTenThousandObjectsFits(t *testing.T) {
	for _, tc := range []struct {
		name             string
		failed, msgBytes int
	}{
		{"all synced", 0, 0},
		{"500 rejected with 3 KB admission messages", 500, 3000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewStatus(&v1alpha1.Sync{}, time.Now)
			b.Applied(tenThousand(tc.failed, tc.msgBytes))
			st := b.Build()
			if n := statusBytes(t, st); n > maxStatus {
				t.Errorf("status takes %d KiB, more than %d KiB", n>>10, maxStatus>>10)
			}
			if n := len(Inventory(st)); n != 10000 || st.Summary == nil || st.Summary.Total != 10000 || st.Summary.OutOfSync != int32(tc.failed) {
				t.Errorf("inventory %d, summary %+v; want 10000 objects, %d out of sync", n, st.Summary, tc.failed)
			}
			if shown := len(st.Resources) + int(st.ResourcesOmitted); shown != tc.failed {
				t.Errorf("%d detailed + %d omitted, want the %d failed objects", len(st.Resources), st.ResourcesOmitted, tc.failed)
			}
		})
	}
}

func TestTheInventoryReadsBackWithItsDetail(t *testing.T) {
	cs := tenThousand(3, 100)
	b := NewStatus(&v1alpha1.Sync{}, time.Now)
	b.Applied(cs)
	st := b.Build()

	again := NewStatus(&v1alpha1.Sync{Status: st}, time.Now)
	objs := again.Inventory()
	if len(objs) != 10000 {
		t.Fatalf("read back %d objects, want 10000", len(objs))
	}
	failed := 0
	for _, o := range objs {
		if o.Sync == v1alpha1.SyncStatusOutOfSync {
			failed++
			if !strings.Contains(o.Message, "dry-run failed") {
				t.Errorf("%s/%s lost its message: %q", o.Namespace, o.Name, o.Message)
			}
		}
	}
	if failed != 3 {
		t.Errorf("%d objects read back out of sync, want 3", failed)
	}
}

func TestAnInventoryFromBeforeTheCompactFormIsRead(t *testing.T) {
	old := v1alpha1.SyncStatus{Resources: []v1alpha1.ResourceStatus{
		{ObjectRef: v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "a"}, Sync: v1alpha1.SyncStatusSynced},
		{ObjectRef: v1alpha1.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "b"}, Sync: v1alpha1.SyncStatusSynced},
	}}
	b := NewStatus(&v1alpha1.Sync{Status: old}, time.Now)
	diff := b.Applied(&contract.ChangeSet{Changes: []contract.Change{{Object: v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "a"}, Action: contract.ActionUnchanged}}})
	want := []v1alpha1.ObjectRef{{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "b"}}
	if d := cmp.Diff(want, diff.Stale); d != "" || diff.Before != 2 {
		t.Errorf("stale (-want +got):\n%s\nbefore = %d, want 2", d, diff.Before)
	}
}

func TestMergeInventoryKeepsWhatAnotherWriterAdded(t *testing.T) {
	cm := func(names ...string) []v1alpha1.ObjectRef {
		var refs []v1alpha1.ObjectRef
		for _, n := range names {
			refs = append(refs, v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: n})
		}
		return refs
	}
	objects := func(names ...string) v1alpha1.SyncStatus {
		return v1alpha1.SyncStatus{Objects: v1alpha1.NewInventory(cm(names...))}
	}
	legacy := func(names ...string) v1alpha1.SyncStatus {
		var st v1alpha1.SyncStatus
		for _, r := range cm(names...) {
			st.LegacyInventory = append(st.LegacyInventory, r.ID())
		}
		return st
	}
	for _, tc := range []struct {
		name               string
		base, ours, theirs v1alpha1.SyncStatus
		want               []string
	}{
		// We pruned b and created c; they recorded d ahead.
		{"both in status.objects", objects("a", "b"), objects("a", "c"), objects("a", "b", "d"), []string{"a", "c", "d"}},
		{"base and theirs in status.inventory, by an older agent", legacy("a", "b"), objects("a", "c"), legacy("a", "b", "d"), []string{"a", "c", "d"}},
		{"nothing added", legacy("a", "b"), objects("a", "c"), legacy("a", "b"), []string{"a", "c"}},
		{"nothing added, as base listed it", objects("a", "b"), objects("a", "c"), objects("a", "b"), []string{"a", "c"}},
		{"one added where base had none", objects(), objects("a"), objects("b"), []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := v1alpha1.NewInventory(cm(tc.want...))
			if d := cmp.Diff(want, MergeInventory(tc.base, tc.ours, tc.theirs)); d != "" {
				t.Errorf("merged (-want +got):\n%s", d)
			}
		})
	}
}

func TestAStatusFromBeforeStatusObjectsMovesToThem(t *testing.T) {
	a := v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "a"}
	b := v1alpha1.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "b"}
	old := v1alpha1.SyncStatus{LegacyInventory: []string{a.ID(), b.ID()}}
	st := NewStatus(&v1alpha1.Sync{Status: old}, time.Now)
	diff := st.Applied(&contract.ChangeSet{Changes: []contract.Change{{Object: a, Action: contract.ActionUnchanged}}})
	if d := cmp.Diff([]v1alpha1.ObjectRef{b}, diff.Stale); d != "" || diff.Before != 2 {
		t.Errorf("stale (-want +got):\n%s\nbefore = %d, want 2", d, diff.Before)
	}
	got := st.Build()
	if got.LegacyInventory != nil {
		t.Errorf("status.inventory = %v, want it moved to status.objects", got.LegacyInventory)
	}
	if d := cmp.Diff(v1alpha1.NewInventory([]v1alpha1.ObjectRef{a, b}), got.Objects); d != "" {
		t.Errorf("status.objects (-want +got):\n%s", d)
	}
}

// TestARevisionRefusedAtValidationAddsNothingToTheInventory: objects an apply
// never wrote (refused by the API server's validation, or held back with them)
// are shown but not recorded, unless the inventory named them already: the
// next revision, which leaves them out, prunes nothing and counts nothing
// against the prune limit.
func TestARevisionRefusedAtValidationAddsNothingToTheInventory(t *testing.T) {
	cm := func(name string) v1alpha1.ObjectRef {
		return v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: name}
	}
	b := NewStatus(&v1alpha1.Sync{Status: v1alpha1.SyncStatus{Objects: v1alpha1.NewInventory([]v1alpha1.ObjectRef{cm("kept")})}}, time.Now)
	b.Applied(&contract.ChangeSet{Changes: []contract.Change{
		{Object: cm("bad"), Action: contract.ActionFailed, Note: contract.NoteRefused, Err: errors.New("data.v: not a string")},
		{Object: cm("held"), Action: contract.ActionHeld, Note: contract.NoteHeld},
		{Object: cm("kept"), Action: contract.ActionHeld, Note: contract.NoteHeld},
	}})
	st := b.Build()
	if got := Inventory(st); len(got) != 1 || got[0] != cm("kept") {
		t.Fatalf("inventory %v; want only the object it named before", got)
	}
	if !slices.ContainsFunc(st.Resources, func(r v1alpha1.ResourceStatus) bool { return r.ObjectRef == cm("bad") }) {
		t.Errorf("the refused object is not shown: %v", st.Resources)
	}

	next := NewStatus(&v1alpha1.Sync{Status: st}, time.Now)
	diff := next.Applied(&contract.ChangeSet{Changes: []contract.Change{
		{Object: cm("kept"), Action: contract.ActionUnchanged},
		{Object: cm("gate"), Action: contract.ActionCreated},
	}})
	if len(diff.Stale) != 0 || diff.Before != 1 {
		t.Errorf("the fixed revision finds %v stale of %d; want nothing of 1", diff.Stale, diff.Before)
	}
}

// TestARefusedRevisionReconciledAgainStaysOutOfTheInventory: a Sync whose only
// objects were refused has an empty inventory and shows them in detail; the
// next reconcile of the same revision, and the fix after it, read that detail
// as detail, not as an inventory of a status from before status.objects (found
// by the notification e2e test under CI's load, where the refused revision was
// reconciled twice and the fix then stopped at the prune limit).
func TestARefusedRevisionReconciledAgainStaysOutOfTheInventory(t *testing.T) {
	bad := v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "bad"}
	refused := &contract.ChangeSet{Changes: []contract.Change{
		{Object: bad, Action: contract.ActionFailed, Note: contract.NoteRefused, Err: errors.New("data.v: not a string")},
	}}
	st := v1alpha1.SyncStatus{}
	for i := range 2 {
		b := NewStatus(&v1alpha1.Sync{Status: st}, time.Now)
		if diff := b.Applied(refused); diff.Before != 0 || len(diff.Stale) != 0 {
			t.Fatalf("reconcile %d found an inventory of %d, %v stale; want none", i+1, diff.Before, diff.Stale)
		}
		st = b.Build()
		if got := Inventory(st); len(got) != 0 {
			t.Fatalf("reconcile %d recorded %v; want nothing", i+1, got)
		}
		if len(st.Resources) != 1 || st.Resources[0].ObjectRef != bad {
			t.Fatalf("reconcile %d shows %v; want the refused object", i+1, st.Resources)
		}
	}
	fix := NewStatus(&v1alpha1.Sync{Status: st}, time.Now)
	diff := fix.Applied(&contract.ChangeSet{Changes: []contract.Change{
		{Object: v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "gate"}, Action: contract.ActionCreated},
	}})
	if len(diff.Stale) != 0 || diff.Before != 0 {
		t.Errorf("the fix finds %v stale of %d; want nothing of 0", diff.Stale, diff.Before)
	}
}
