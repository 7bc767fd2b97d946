package ui

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
)

// graphSync is a Sync of a Deployment web (Progressing), a Service and n
// ConfigMaps (cm-000 OutOfSync), and the index of what web owns: one
// ReplicaSet of pods Pods, the first of them failed.
func graphSync(n, pods int) (*v1alpha1.Sync, *ownedIndex) {
	sy := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Generation: 1}}
	sy.Status = readyStatus("main@sha1:4f2c1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b", "Run web")
	cms := make([]string, n)
	for i := range cms {
		cms[i] = fmt.Sprintf("cm-%03d", i)
	}
	sy.Status.Objects = []v1alpha1.InventoryGroup{
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Names: []string{"web"}},
		{Version: "v1", Kind: "Service", Namespace: "shop", Names: []string{"web"}},
		{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Names: cms},
	}
	sy.Status.Resources = []v1alpha1.ResourceStatus{
		{ObjectRef: v1alpha1.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web"}, Sync: v1alpha1.SyncStatusSynced, Health: v1alpha1.HealthProgressing},
		{ObjectRef: v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "cm-000"}, Sync: v1alpha1.SyncStatusOutOfSync, Health: v1alpha1.HealthHealthy},
	}
	idx := &ownedIndex{byOwner: map[ownerKey][]*unstructured.Unstructured{}}
	own := func(owner ownerKey, kind, name string, status map[string]any) {
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": name, "namespace": "shop"}, "status": status}}
		if kind == "ReplicaSet" {
			o.SetAPIVersion("apps/v1")
		}
		idx.byOwner[owner] = append(idx.byOwner[owner], o)
	}
	own(ownerKey{"apps", "Deployment", "shop/web"}, "ReplicaSet", "web-5d8f", map[string]any{})
	for i := range pods {
		phase := "Running"
		if i == 0 {
			phase = "Failed"
		}
		own(ownerKey{"apps", "ReplicaSet", "shop/web-5d8f"}, "Pod", fmt.Sprintf("web-5d8f-%02d", i), map[string]any{"phase": phase})
	}
	return sy, idx
}

// shape is a graph as a person reads it: each node's kind, name and health, its
// depth by indent, "+" before a folded group.
func shape(v graphView) string {
	var b strings.Builder
	var walk func(n graphNode, depth int)
	walk = func(n graphNode, depth int) {
		fmt.Fprintf(&b, "%s%s %s %s %s\n", strings.Repeat("  ", depth), n.Icon, n.Kind, n.Name, n.Health)
		if !n.Open {
			fmt.Fprintf(&b, "%s+ %d folded: %s\n", strings.Repeat("  ", depth+1), len(n.Children), n.Counts)
			return
		}
		for _, c := range n.Children {
			walk(c, depth+1)
		}
	}
	for _, g := range v.Groups {
		fold := ""
		if !g.Open {
			fold = "+ "
		}
		fmt.Fprintf(&b, "%s%s %s: %s\n", fold, g.Namespace, g.Kind, g.Counts)
		if g.Open {
			for _, n := range g.Nodes {
				walk(n, 1)
			}
		}
	}
	return b.String()
}

func TestTheGraphDrawsObjectsAndWhatTheyOwnFoldingLargeFanOuts(t *testing.T) {
	sy, idx := graphSync(20, 3)
	v := graphOf(sy, idx, graphFilter{})
	pods, _ := idx.children("apps", "ReplicaSet", "shop", "web-5d8f", 1)
	running := pods[1].Health // as package health judges a running Pod with no conditions
	want := fmt.Sprintf(`+ shop ConfigMap: 20 Healthy
shop Deployment.apps: 1 Progressing
  i-deploy Deployment.apps web Progressing
    i-rs ReplicaSet web-5d8f %s
      i-pod Pod web-5d8f-00 Degraded
      i-pod Pod web-5d8f-01 %[2]s
      i-pod Pod web-5d8f-02 %[2]s
shop Service: 1 Healthy
  i-svc Service web Healthy
`, orDash(v.Groups[1].Nodes[0].Children[0].Health), running)
	if diff := cmp.Diff(want, shape(v)); diff != "" {
		t.Errorf("the graph (-want +got):\n%s", diff)
	}
	if v.Shown != 22 || v.Total != 22 {
		t.Errorf("shown %d of %d, want 22 of 22", v.Shown, v.Total)
	}
	if got := v.Groups[0].Nodes[0].DiffURL; got == "" {
		t.Error("the OutOfSync ConfigMap cm-000 links no diff")
	}

	t.Run("an owner of more than 12 folds them under their count by health", func(t *testing.T) {
		sy, idx := graphSync(1, 40)
		rs := graphOf(sy, idx, graphFilter{}).Groups[1].Nodes[0].Children[0]
		if rs.Open || len(rs.Children) != 40 || !strings.HasPrefix(rs.Counts, "39 ") || !strings.HasSuffix(rs.Counts, ", 1 Degraded") {
			t.Errorf("the ReplicaSet of 40 Pods: open %v, %d children, counts %q; want folded, 40, \"39 …, 1 Degraded\"", rs.Open, len(rs.Children), rs.Counts)
		}
	})
}

func TestTheGraphFilters(t *testing.T) {
	sy, idx := graphSync(20, 3)
	for _, tc := range []struct {
		name   string
		filter graphFilter
		want   []string // the names of the top-level objects kept
	}{
		{"kind keeps the objects of that kind", graphFilter{Kind: "Service"}, []string{"web"}},
		{"an owned kind keeps its owners", graphFilter{Kind: "Pod"}, []string{"web"}},
		{"sync keeps the OutOfSync", graphFilter{Sync: "OutOfSync"}, []string{"cm-000"}},
		{"an owned object's health keeps its owner", graphFilter{Health: "Degraded"}, []string{"web"}},
		{"filters add up", graphFilter{Kind: "ConfigMap", Health: "Degraded"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := graphOf(sy, idx, tc.filter)
			var got []string
			for _, g := range v.Groups {
				if !g.Open {
					t.Errorf("group %s is folded under a filter", g.Kind)
				}
				for _, n := range g.Nodes {
					got = append(got, n.Name)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
			if v.Shown != len(tc.want) || v.Total != 22 {
				t.Errorf("shown %d of %d, want %d of 22", v.Shown, v.Total, len(tc.want))
			}
		})
	}
}

func TestTheGraphPageRendersAThousandObjects(t *testing.T) {
	p, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	sy, idx := graphSync(1000, 60)
	sy.Name = `<script>window.__pwned=1</script>`
	var buf bytes.Buffer
	if err := p.byName["graph"].ExecuteTemplate(&buf, "layout", graphOf(sy, idx, graphFilter{})); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{`<symbol id="i-deploy"`, `<use href="#i-pod"/>`, `1000 ConfigMap`, `50 Pod`, `… and 10 more`, `&lt;script&gt;`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>window") {
		t.Error("the Sync's name became markup")
	}
	if n := len(foldedGroup.FindAllString(page, -1)); n != 2 {
		t.Errorf("%d folded groups, want 2 (the ConfigMaps and the Pods)", n)
	}
	buf.Reset()
	if err := p.byName["graph"].ExecuteTemplate(&buf, "layout", graphOf(sy, idx, graphFilter{Open: true})); err != nil {
		t.Fatal(err)
	}
	if n := len(foldedGroup.FindAllString(buf.String(), -1)); n != 0 {
		t.Errorf("open=all: %d groups folded, want none", n)
	}
}

// foldedGroup is a group or owner drawn folded (no open attribute).
var foldedGroup = regexp.MustCompile(`<details class="g-fold" data-fold="[^"]*">`)
