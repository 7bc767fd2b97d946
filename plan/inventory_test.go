package plan_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/source/result"
)

func TestARevisionTooLargeForTheInventoryIsRefused(t *testing.T) {
	snapOf := func(n int) *result.Snapshot {
		snap := &result.Snapshot{Path: "apps"}
		for i := 0; i < n; i++ {
			o := &unstructured.Unstructured{}
			o.SetAPIVersion("v1")
			o.SetKind("ConfigMap")
			o.SetName(fmt.Sprintf("app-%05d-config", i))
			snap.Objects = append(snap.Objects, o)
		}
		return snap
	}
	obj := &v1alpha1.Sync{Spec: v1alpha1.SyncSpec{Destination: v1alpha1.DestinationSpec{Namespace: "team-a"}}}
	if err := plan.CheckSize(obj, snapOf(10000)); err != nil {
		t.Errorf("10,000 objects: %v, want them accepted", err)
	}
	err := plan.CheckSize(obj, snapOf(60000))
	var held *plan.HeldError
	if !errors.As(err, &held) || held.Reason != v1alpha1.ReasonRevisionTooLarge || !strings.Contains(err.Error(), "Split the path into several Syncs") {
		t.Errorf("60,000 objects: %v, want RevisionTooLarge saying how to split", err)
	}
}

// mixedWorkload is the benchmarks' workload of n objects (test/workload): n/4 apps,
// each a Deployment, a Service, a ServiceAccount and a ConfigMap named app-NNNN,
// spread over ten namespaces with names as long as the tests' generated ones.
func mixedWorkload(n int) []*unstructured.Unstructured {
	kinds := []struct{ apiVersion, kind string }{{"apps/v1", "Deployment"}, {"v1", "Service"}, {"v1", "ServiceAccount"}, {"v1", "ConfigMap"}}
	var objs []*unstructured.Unstructured
	for i := 0; i < n/len(kinds); i++ {
		for _, k := range kinds {
			o := &unstructured.Unstructured{}
			o.SetAPIVersion(k.apiVersion)
			o.SetKind(k.kind)
			o.SetNamespace(fmt.Sprintf("benchmarkshippedbinaryfirstsync-%02d-x7k2q", i%10))
			o.SetName(fmt.Sprintf("app-%04d", i))
			objs = append(objs, o)
		}
	}
	return objs
}

func TestOneSyncOfTenThousandMixedObjectsFitsWithRoomToSpare(t *testing.T) {
	snap := &result.Snapshot{Path: "apps", Objects: mixedWorkload(10000)}
	if err := plan.CheckSize(&v1alpha1.Sync{}, snap); err != nil {
		t.Fatalf("10,000 mixed objects: %v, want them accepted", err)
	}
	refs := make([]v1alpha1.ObjectRef, len(snap.Objects))
	legacy := 0
	for i, o := range snap.Objects {
		refs[i] = v1alpha1.NewObjectRef(o.GroupVersionKind(), o.GetNamespace(), o.GetName())
		legacy += len(refs[i].ID()) + len(`"",`)
	}
	n := v1alpha1.InventoryBytes(v1alpha1.NewInventory(refs))
	if n > plan.MaxInventoryBytes/4 {
		t.Errorf("the inventory of 10,000 mixed objects takes %d KiB, more than a quarter of the %d KiB allowed", n>>10, plan.MaxInventoryBytes>>10)
	}
	t.Logf("10,000 mixed objects: inventory %d KiB (one id per object: %d KiB)", n>>10, legacy>>10)
}

func TestTheGuardsOfARevision(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	for _, tc := range []struct {
		name                      string
		spec                      v1alpha1.SyncSpec
		objects, prune, inventory int
		want                      string // the reason of the refusal, "" for none
	}{
		{name: "a render with objects proceeds", objects: 3},
		{name: "an empty render is held", want: v1alpha1.ReasonEmptyRender},
		{name: "an empty render that the Sync allows proceeds", spec: v1alpha1.SyncSpec{AllowEmpty: true}},
		{name: "half the inventory may be pruned by default", objects: 2, prune: 2, inventory: 4},
		{name: "more than half is held by default", objects: 1, prune: 3, inventory: 4, want: v1alpha1.ReasonPruneLimit},
		{name: "an allowed empty render may prune everything", spec: v1alpha1.SyncSpec{AllowEmpty: true}, prune: 4, inventory: 4},
		{name: "an explicit limit holds an allowed empty render too", spec: v1alpha1.SyncSpec{AllowEmpty: true, PruneLimit: pct("25%")}, prune: 2, inventory: 4, want: v1alpha1.ReasonPruneLimit},
		{name: "a limit of 100% lets everything go", objects: 1, spec: v1alpha1.SyncSpec{PruneLimit: pct("100%")}, prune: 4, inventory: 4},
		{name: "a limit that is no number is held", objects: 1, spec: v1alpha1.SyncSpec{PruneLimit: pct("half")}, prune: 1, inventory: 4, want: v1alpha1.ReasonPruneLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &v1alpha1.Sync{Spec: tc.spec}
			snap := &result.Snapshot{Path: "apps"}
			for i := 0; i < tc.objects; i++ {
				snap.Objects = append(snap.Objects, &unstructured.Unstructured{})
			}
			err := plan.CheckEmpty(obj, snap)
			if err == nil && tc.inventory > 0 {
				err = plan.CheckPruneLimit(obj, tc.prune, tc.inventory, tc.objects == 0)
			}
			got := ""
			var held *plan.HeldError
			if errors.As(err, &held) {
				got = held.Reason
			} else if err != nil {
				t.Fatalf("%v is no *HeldError", err)
			}
			if got != tc.want {
				t.Errorf("held for %q (%v), want %q", got, err, tc.want)
			}
		})
	}
}

func TestTheInventoryIsReadWithTheDetailTheStatusHas(t *testing.T) {
	web := v1alpha1.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "web"}
	cfg := v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "web"}
	degraded := v1alpha1.ResourceStatus{ObjectRef: web, Sync: v1alpha1.SyncStatusSynced, Health: v1alpha1.HealthDegraded, Message: "crash loop"}
	for _, tc := range []struct {
		name string
		st   v1alpha1.SyncStatus
	}{
		{"status.objects", v1alpha1.SyncStatus{
			Objects: append(v1alpha1.NewInventory([]v1alpha1.ObjectRef{web, cfg}), v1alpha1.InventoryGroup{Kind: "ConfigMap", Names: []string{"no-version"}}),
		}},
		{"status.inventory, as agents before status.objects wrote it", v1alpha1.SyncStatus{
			LegacyInventory: []string{web.ID(), "not an id", cfg.ID()},
		}},
		{"both, as an older agent's write after an upgrade leaves them", v1alpha1.SyncStatus{
			Objects:         v1alpha1.NewInventory([]v1alpha1.ObjectRef{web}),
			LegacyInventory: []string{web.ID(), cfg.ID()},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.st.Resources = []v1alpha1.ResourceStatus{degraded}
			want := []v1alpha1.ResourceStatus{degraded, {ObjectRef: cfg, Sync: v1alpha1.SyncStatusSynced, Health: v1alpha1.HealthHealthy}}
			byKey := cmpopts.SortSlices(func(a, b v1alpha1.ResourceStatus) bool { return a.Key() < b.Key() })
			if d := cmp.Diff(want, plan.InventoryDetail(tc.st), byKey); d != "" {
				t.Errorf("InventoryDetail (-want +got):\n%s", d)
			}
			refsByKey := cmpopts.SortSlices(func(a, b v1alpha1.ObjectRef) bool { return a.Key() < b.Key() })
			if d := cmp.Diff([]v1alpha1.ObjectRef{web, cfg}, plan.Inventory(tc.st), refsByKey); d != "" {
				t.Errorf("Inventory (-want +got):\n%s", d)
			}
		})
	}
}
