package v1alpha1

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestInventoryEntryRoundTrips(t *testing.T) {
	for _, e := range []ObjectRef{
		{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "config"},
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "api.v2"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "system:odd_name_with_underscores"},
		{Version: "v1", Kind: "Namespace", Name: "web"},
	} {
		got, err := ParseInventoryEntry(e.ID())
		if err != nil || got != e {
			t.Errorf("ParseInventoryEntry(%q) = %+v, %v; want %+v", e.ID(), got, err, e)
		}
	}
}

func TestParseInventoryEntryRefusesMalformedIDs(t *testing.T) {
	for _, id := range []string{"", "web", "web_config", "web_config__ConfigMap", "web___ConfigMap_v1", "web_config___v1"} {
		if e, err := ParseInventoryEntry(id); err == nil {
			t.Errorf("ParseInventoryEntry(%q) = %+v, want an error", id, e)
		}
	}
}

func FuzzParseInventoryEntry(f *testing.F) {
	f.Add("web_config__ConfigMap_v1")
	f.Add("_name_a_b_c")
	f.Fuzz(func(t *testing.T, id string) {
		e, err := ParseInventoryEntry(id)
		if err != nil {
			return
		}
		if strings.Contains(e.Namespace+e.Group+e.Kind+e.Version, "_") {
			t.Fatalf("%q parsed to %+v: only the name may hold an underscore", id, e)
		}
		if again, err := ParseInventoryEntry(e.ID()); err != nil || again != e {
			t.Fatalf("%q → %+v → %q → %+v, %v", id, e, e.ID(), again, err)
		}
	})
}

func TestSyncLabelValueIsAValidLabelValue(t *testing.T) {
	long := strings.Repeat("n", 253)
	for _, c := range []struct{ ns, name, want string }{
		{"tether-system", "web", "tether-system.web"},
		{"team-a", long, ""},
	} {
		got := SyncLabelValue(c.ns, c.name)
		if c.want != "" && got != c.want {
			t.Errorf("SyncLabelValue(%s, %s) = %q, want %q", c.ns, c.name, got, c.want)
		}
		if len(got) > 63 || strings.Trim(got, "abcdefghijklmnopqrstuvwxyz0123456789-.") != "" {
			t.Errorf("SyncLabelValue(%s, %.10s...) = %q is not a valid label value", c.ns, c.name, got)
		}
	}
	if SyncLabelValue("a", long) == SyncLabelValue("b", long) {
		t.Errorf("two Syncs with long names share a label value")
	}
}

func TestAnInventoryGroupsByKindAndNamespace(t *testing.T) {
	web := ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "api"}
	a := ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "a"}
	b := ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "b"}
	ns := ObjectRef{Version: "v1", Kind: "Namespace", Name: "web"}
	groups := NewInventory([]ObjectRef{web, b, ns, a, b})
	want := []InventoryGroup{
		{Version: "v1", Kind: "Namespace", Names: []string{"web"}},
		{Version: "v1", Kind: "ConfigMap", Namespace: "web", Names: []string{"a", "b"}},
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Names: []string{"api"}},
	}
	if d := cmp.Diff(want, groups); d != "" {
		t.Errorf("NewInventory (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]ObjectRef{ns, a, b, web}, InventoryRefs(groups)); d != "" {
		t.Errorf("InventoryRefs (-want +got):\n%s", d)
	}
	if NewInventory(nil) != nil {
		t.Errorf("NewInventory(nil) = %v, want no groups", NewInventory(nil))
	}
	js, err := json.Marshal(groups)
	if err != nil {
		t.Fatal(err)
	}
	if got := InventoryBytes(groups); got != len(js) {
		t.Errorf("InventoryBytes = %d, want the %d bytes of %s", got, len(js), js)
	}
}

func TestInventoryRefsLeavesOutWhatTetherCannotHaveWritten(t *testing.T) {
	groups := []InventoryGroup{
		{Kind: "ConfigMap", Namespace: "web", Names: []string{"no-version"}},
		{Version: "v1", Namespace: "web", Names: []string{"no-kind"}},
		{Version: "v1", Kind: "ConfigMap", Namespace: "web", Names: []string{"", "kept"}},
	}
	want := []ObjectRef{{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "kept"}}
	if d := cmp.Diff(want, InventoryRefs(groups)); d != "" {
		t.Errorf("InventoryRefs (-want +got):\n%s", d)
	}
}
