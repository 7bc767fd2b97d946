package ui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
)

// depSync is Sync ns/name of generation 1, Ready when ready, depending on
// deps ("name" in ns, or "namespace/name").
func depSync(ns, name string, ready bool, deps ...string) v1alpha1.Sync {
	s := v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1}}
	s.Status = readyStatus("main@sha1:4f2c1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b", "Release")
	if !ready {
		s.Status.Conditions[0].Status, s.Status.Conditions[0].Reason = metav1.ConditionFalse, v1alpha1.ReasonDependencyNotReady
	}
	for _, d := range deps {
		ref := v1alpha1.DependencyReference{Name: d}
		if dns, dname, ok := strings.Cut(d, "/"); ok {
			ref = v1alpha1.DependencyReference{Namespace: dns, Name: dname}
		}
		s.Spec.DependsOn = append(s.Spec.DependsOn, ref)
	}
	return s
}

// columnsOf is each column of page as "key(marks) ...", marks being W for
// waiting, C for in a cycle and M for missing.
func columnsOf(page depPage) []string {
	var got []string
	for _, c := range page.Columns {
		var boxes []string
		for _, b := range c.Boxes {
			marks := ""
			for mark, on := range map[string]bool{"W": b.Waiting, "C": b.Cycle, "M": b.Missing} {
				if on {
					marks += mark
				}
			}
			boxes = append(boxes, b.Key+"("+sortedString(marks)+")")
		}
		got = append(got, fmt.Sprintf("%d: %s", c.Number, strings.Join(boxes, " ")))
	}
	return got
}

func sortedString(s string) string {
	b := []byte(s)
	for i := range b {
		for j := i + 1; j < len(b); j++ {
			if b[j] < b[i] {
				b[i], b[j] = b[j], b[i]
			}
		}
	}
	return string(b)
}

func TestDependenciesAreLaidOutInColumnsByDepth(t *testing.T) {
	for _, tc := range []struct {
		name      string
		syncs     []v1alpha1.Sync
		namespace string
		want      []string
		alone     int
	}{{
		name: "a chain, its middle waiting for its first",
		syncs: []v1alpha1.Sync{
			depSync("shop", "c", true, "b"), depSync("shop", "a", false), depSync("shop", "b", false, "a"), depSync("shop", "lonely", true),
		},
		want:  []string{"1: shop/a()", "2: shop/b(W)", "3: shop/c(W)"},
		alone: 1,
	}, {
		name: "a column is one more than the deepest dependency's",
		syncs: []v1alpha1.Sync{
			depSync("shop", "db", true), depSync("shop", "cache", true), depSync("shop", "api", true, "db"),
			depSync("shop", "web", true, "api", "cache"),
		},
		want: []string{"1: shop/cache() shop/db()", "2: shop/api()", "3: shop/web()"},
	}, {
		name:  "a missing dependency is a box of its own, and its dependent waits",
		syncs: []v1alpha1.Sync{depSync("shop", "web", true, "ghost", "ops/monitoring")},
		want:  []string{"1: ops/monitoring(M) shop/ghost(M)", "2: shop/web(W)"},
	}, {
		name: "a cycle is drawn, each Sync of it marked",
		syncs: []v1alpha1.Sync{
			depSync("shop", "a", true, "c"), depSync("shop", "b", true, "a"), depSync("shop", "c", true, "b"), depSync("shop", "d", true, "c"),
		},
		// a is looked at first: c and b after it, and b's edge back to a is
		// the one left out.
		want: []string{"1: shop/b(C)", "2: shop/c(C)", "3: shop/a(C) shop/d()"},
	}, {
		name: "a namespace shows its own Syncs and what they depend on elsewhere",
		syncs: []v1alpha1.Sync{
			depSync("ops", "monitoring", true), depSync("shop", "web", true, "ops/monitoring"),
			depSync("ops", "alerts", true, "monitoring"), depSync("shop", "alone", true),
		},
		namespace: "shop",
		want:      []string{"1: ops/monitoring()", "2: shop/web()"},
		alone:     1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			page := layOutDependencies(tc.syncs, tc.namespace)
			if diff := cmp.Diff(tc.want, columnsOf(page)); diff != "" {
				t.Errorf("columns (-want +got):\n%s", diff)
			}
			if page.Alone != tc.alone {
				t.Errorf("%d Syncs alone, want %d", page.Alone, tc.alone)
			}
		})
	}
}

func TestADependencyBoxSaysWhatItWaitsFor(t *testing.T) {
	running := depSync("shop", "b", false, "a", "gone")
	running.Status.Run = &v1alpha1.RunStatus{Revision: "main@sha1:1", Phase: "Sync", Wave: 2, State: v1alpha1.RunRunning}
	page := layOutDependencies([]v1alpha1.Sync{depSync("shop", "a", false), running, depSync("shop", "c", true, "b")}, "")
	b := page.Columns[1].Boxes[0]
	want := []depLink{
		{Key: "shop/a", Label: "a", Href: "#sync-shop/a", Ready: "False", Wait: "it is not Ready"},
		{Key: "shop/gone", Label: "gone", Href: "#sync-shop/gone", Wait: "it does not exist, or you may not list it"},
	}
	if diff := cmp.Diff(want, b.DependsOn); diff != "" {
		t.Errorf("b depends on (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]depLink{{Key: "shop/c", Label: "c", Href: "#sync-shop/c", Ready: "True"}}, b.NeededBy); diff != "" {
		t.Errorf("b is needed by (-want +got):\n%s", diff)
	}
	if b.Run != "wave 2 of phase Sync: Running" {
		t.Errorf("b's run %q, want its wave in words", b.Run)
	}

	out := renderPage(t, "dependencies", page)
	for _, want := range []string{
		`<li class="dep-box" id="sync-shop/b">`,
		`<div class="dep-head" data-key="shop/b">`,
		`<strong class="dep-mark dep-waiting">Waiting</strong>`,
		`<li data-key="shop/a"><a href="#sync-shop/a">a</a> Ready <span class="status" data-field="ready" data-value="False">False</span> <span class="dep-wait">waiting for a: it is not Ready</span></li>`,
		`<p class="dep-name">shop/gone</p>`,
		`<span class="dep-run">wave 2 of phase Sync: Running</span>`,
		`<h2 id="dep-col-3">Then, column 3</h2>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the dependencies page lacks %q:\n%s", want, out)
		}
	}
}

// renderPage renders the page name of data, as the server does.
func renderPage(t *testing.T, name string, data any) string {
	t.Helper()
	p, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := p.byName[name].ExecuteTemplate(&out, "layout", data); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestTheDependenciesPageIsServed(t *testing.T) {
	c := admin(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	newSync(t, c, ns, "db", nil, readyStatus("main@sha1:4f2c1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b", "Add the database"))
	newSync(t, c, ns, "web", func(s *v1alpha1.Sync) { s.Spec.DependsOn = []v1alpha1.DependencyReference{{Name: "db"}} }, v1alpha1.SyncStatus{})
	b := startUI(t, controlplane.Shared(t).Config(), "default", true)
	page := b.get("/dependencies?namespace=" + ns)
	for _, want := range []string{
		`<div class="dep-head" data-key="` + ns + `/db">`,
		`<li data-key="` + ns + `/db"><a href="#sync-` + ns + `/db">db</a> Ready`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the dependencies page lacks %q:\n%s", want, page)
		}
	}
	if fleet := b.get("/?namespace=" + ns); !strings.Contains(fleet, `<a href="/dependencies?namespace=`+ns+`">Dependencies</a>`) {
		t.Errorf("the fleet does not link the namespace's dependencies:\n%s", fleet)
	}
}
