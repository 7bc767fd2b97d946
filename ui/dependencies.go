package ui

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

// depBox is one Sync of the dependency graph: its row, the column it is drawn
// in, what it depends on and what depends on it.
type depBox struct {
	Key, Namespace, Name string
	// Row is the Sync's status in words; zero for a Sync that is named in a
	// dependsOn and is not among those listed (Missing).
	Row     row
	Missing bool
	// Column is 0 for a Sync that depends on nothing, else 1 + the largest
	// column of its dependencies: a Sync is drawn right of everything it waits
	// for.
	Column int
	// Cycle says its dependsOn leads back to it; the edge that closes the
	// cycle is left out of the columns.
	Cycle     bool
	DependsOn []depLink
	NeededBy  []depLink
	// Waiting says it waits for one of its dependencies (missing, or not
	// Ready at its current revision).
	Waiting bool
	// Run is the ordered apply of its revision in progress or failed ("wave
	// 2 of phase Sync: Running"), "" when there is none or it succeeded.
	Run string
}

// depLink is a Sync that a box depends on or is needed by.
type depLink struct {
	Key   string // namespace/name
	Label string // name, or namespace/name in another namespace
	Href  string // its box on the page, or its Sync's page when not drawn
	Ready string // its Ready as the fleet words it; "" when it is missing
	// Wait says why the box waits for it ("not Ready", "does not exist"),
	// "" when it does not.
	Wait string
}

// depColumn is one column of the dependency graph.
type depColumn struct {
	Number int // from 1
	Boxes  []depBox
}

// depPage is what the dependency graph page shows.
type depPage struct {
	Namespace  string   // the namespace filter, "" for every namespace
	Namespaces []string // those of the Syncs watched, for the filter
	Columns    []depColumn
	// Alone counts the Syncs (of the namespace filtered) that depend on
	// nothing and that nothing depends on: not drawn.
	Alone int
}

// dependencies draws the dependsOn graph of the Syncs the user may list,
// from the shared watch.
func (s *Server) dependencies(w http.ResponseWriter, r *http.Request) {
	list := &v1alpha1.SyncList{}
	if err := viewerOf(r).cache.List(r.Context(), list); err != nil {
		s.refuse(w, r, http.StatusBadGateway, "Listing Syncs failed: "+err.Error())
		return
	}
	s.render(w, http.StatusOK, "dependencies", layOutDependencies(list.Items, r.URL.Query().Get("namespace")))
}

// layOutDependencies places the Syncs of namespace ("" for all) that depend
// on another or are depended on, and every Sync they depend on (in any
// namespace, or missing), in columns by depth of dependency.
func layOutDependencies(syncs []v1alpha1.Sync, namespace string) depPage {
	page := depPage{Namespace: namespace}
	byKey := make(map[string]*v1alpha1.Sync, len(syncs))
	deps := map[string][]string{}
	neededBy := map[string][]string{}
	for i := range syncs {
		s := &syncs[i]
		key := keyOf(types.NamespacedName{Namespace: s.Namespace, Name: s.Name})
		byKey[key] = s
		for _, d := range plan.DependenciesOf(s) {
			deps[key] = append(deps[key], keyOf(d))
			neededBy[keyOf(d)] = append(neededBy[keyOf(d)], key)
		}
		if !slices.Contains(page.Namespaces, s.Namespace) {
			page.Namespaces = append(page.Namespaces, s.Namespace)
		}
	}
	slices.Sort(page.Namespaces)
	shown := map[string]bool{}
	var show func(key string)
	show = func(key string) {
		if shown[key] {
			return
		}
		shown[key] = true
		for _, d := range deps[key] {
			show(d)
		}
	}
	for i := range syncs {
		s := &syncs[i]
		key := s.Namespace + "/" + s.Name
		switch {
		case namespace != "" && s.Namespace != namespace:
		case len(deps[key]) == 0 && len(neededBy[key]) == 0:
			page.Alone++
		default:
			show(key)
		}
	}
	places := placesOf(deps)
	boxes := make([]depBox, 0, len(shown))
	for key := range shown {
		b := boxOf(key, byKey, deps[key], neededBy[key], shown)
		b.Column, b.Cycle = places[key].column, places[key].cycle
		boxes = append(boxes, b)
	}
	slices.SortFunc(boxes, func(a, b depBox) int { return strings.Compare(a.Key, b.Key) })
	for _, b := range boxes {
		for len(page.Columns) <= b.Column {
			page.Columns = append(page.Columns, depColumn{Number: len(page.Columns) + 1})
		}
		page.Columns[b.Column].Boxes = append(page.Columns[b.Column].Boxes, b)
	}
	return page
}

func keyOf(n types.NamespacedName) string { return n.Namespace + "/" + n.Name }

// place is where a Sync is drawn: its column, and whether its dependsOn
// leads back to it.
type place struct {
	column int
	cycle  bool
}

// placesOf is the place of every Sync of deps (each key's dependencies, by
// key) and of every dependency: column 0 for one that depends on nothing,
// else 1 + the largest column of its dependencies. An edge back to a Sync
// whose column is being found (a cycle) counts for nothing, and marks the
// Syncs of the cycle.
func placesOf(deps map[string][]string) map[string]place {
	places := map[string]place{}
	onPath := map[string]int{} // key → its index in path, while its column is found
	var path []string
	var visit func(key string) int
	visit = func(key string) int {
		if p, ok := places[key]; ok {
			return p.column
		}
		onPath[key] = len(path)
		path = append(path, key)
		col := 0
		for _, d := range deps[key] {
			if at, ok := onPath[d]; ok {
				for _, k := range path[at:] {
					p := places[k]
					p.cycle = true
					places[k] = p
				}
				continue
			}
			col = max(col, visit(d)+1)
		}
		path = path[:len(path)-1]
		delete(onPath, key)
		p := places[key] // holds cycle, when a deeper visit marked it
		p.column = col
		places[key] = p
		return col
	}
	keys := make([]string, 0, len(deps))
	for k := range deps {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		visit(k)
	}
	return places
}

// boxOf is the box of the Sync key (of byKey, or missing), with its links
// (to the boxes shown, else to the Syncs' pages).
func boxOf(key string, byKey map[string]*v1alpha1.Sync, deps, neededBy []string, shown map[string]bool) depBox {
	ns, name, _ := strings.Cut(key, "/")
	b := depBox{Key: key, Namespace: ns, Name: name}
	s, ok := byKey[key]
	if !ok {
		b.Missing = true
		return b
	}
	b.Row, b.Run = rowOf(s), runOf(s)
	for _, d := range deps {
		l := linkOf(d, ns, byKey, shown)
		l.Wait = waitFor(byKey[d])
		b.Waiting = b.Waiting || l.Wait != ""
		b.DependsOn = append(b.DependsOn, l)
	}
	for _, n := range neededBy {
		b.NeededBy = append(b.NeededBy, linkOf(n, ns, byKey, shown))
	}
	slices.SortFunc(b.NeededBy, func(x, y depLink) int { return strings.Compare(x.Key, y.Key) })
	return b
}

// linkOf is the link to key from a box of namespace ns.
func linkOf(key, ns string, byKey map[string]*v1alpha1.Sync, shown map[string]bool) depLink {
	l := depLink{Key: key, Label: key, Href: "#sync-" + key}
	if !shown[key] {
		l.Href = "/syncs/" + key
	}
	if keyNs, name, _ := strings.Cut(key, "/"); keyNs == ns {
		l.Label = name
	}
	if s, ok := byKey[key]; ok {
		l.Ready = plan.ReadyStatus(s)
	}
	return l
}

// waitFor says why a Sync waits for its dependency dep (nil: missing), as
// the agent judges it (plan.DependencyReady); "" when it need not wait.
func waitFor(dep *v1alpha1.Sync) string {
	if dep == nil {
		return "it does not exist, or you may not list it"
	}
	if ready, why := plan.DependencyReady(dep); !ready {
		return "it is " + why
	}
	return ""
}

// runOf is the ordered apply of s's revision (its waves and hooks) when it
// is running or failed, in words; "" otherwise.
func runOf(s *v1alpha1.Sync) string {
	r := s.Status.Run
	if r == nil || r.State == v1alpha1.RunSucceeded || r.State == "" {
		return ""
	}
	return fmt.Sprintf("wave %d of phase %s: %s", r.Wave, r.Phase, r.State)
}
