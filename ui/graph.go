package ui

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

// collapseAt is the most objects a group or an owner shows open: past it they
// are folded under one line that counts them by health (a Deployment of 40
// Pods, a kind of 300 ConfigMaps), so that a Sync of 1,000 objects reads as a
// page of groups, not a wall of boxes.
const collapseAt = 12

// graphView is what the graph page shows: a Sync's objects drawn left to right,
// the Sync, then its objects grouped by namespace and kind, then what each owns.
type graphView struct {
	Row    row
	Groups []graphGroup
	Filter graphFilter
	// Kinds, Healths and Syncs are the filter's choices: those the Sync's
	// objects have.
	Kinds, Healths, Syncs []string
	Shown, Total          int // top-level objects shown, and in the inventory
	Gaps                  []string
}

// graphFilter keeps the objects of one kind, health or sync ("" keeps all). An
// object passes by its own kind and health or by those of an object it owns
// (kind=Pod keeps the workloads with Pods; health=Degraded the Deployment whose
// Pod is); sync is the inventory's alone (owned objects are not in git).
type graphFilter struct {
	Kind, Health, Sync string
	// Open opens every group and owner, however large (?open=all).
	Open bool
}

// Any says whether the filter leaves anything out.
func (f graphFilter) Any() bool { return f.Kind != "" || f.Health != "" || f.Sync != "" }

// graphGroup is the objects of one namespace and kind.
type graphGroup struct {
	Namespace, Kind, Icon string
	Nodes                 []graphNode
	Counts                string // "3 Healthy, 1 Progressing"
	Worst                 string // the health that most asks to look, its colour the group's
	Open                  bool
}

// graphNode is one object: its kind's icon, its name and marks, and the objects
// it owns, open or folded (Open) under a count.
type graphNode struct {
	Icon, Kind, Name      string
	Sync, Health, Message string
	DiffURL               string // its diff's page, when it is OutOfSync
	ObjectURL             string // its panel: live manifest and Events
	Children              []graphNode
	More                  int    // children left out (maxChildren)
	Counts                string // of Children, by health
	Worst                 string // of Children
	Open                  bool
}

// graphPage draws a Sync's objects and what they own, read as the user, with
// the query's filter.
func (s *Server) graphPage(w http.ResponseWriter, r *http.Request) {
	sy, _, found := s.syncOf(w, r)
	if !found {
		return
	}
	q := r.URL.Query()
	f := graphFilter{Kind: q.Get("kind"), Health: q.Get("health"), Sync: q.Get("sync"), Open: q.Get("open") == "all"}
	idx := readOwned(r.Context(), viewerOf(r).client, ownerNamespaces(plan.Inventory(sy.Status)))
	v := graphOf(sy, idx, f)
	s.render(w, http.StatusOK, "graph", v)
}

// graphOf is the graph of sy, the objects its workloads own found in idx.
func graphOf(sy *v1alpha1.Sync, idx *ownedIndex, f graphFilter) graphView {
	v := graphView{Row: rowOf(sy), Filter: f, Gaps: idx.unreadable}
	kinds, healths, syncs := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, ns := range plan.Tree(sy) {
		for _, k := range ns.Kinds {
			g := graphGroup{Namespace: ns.Namespace, Kind: k.Kind, Icon: iconOf(k.Kind)}
			for _, o := range k.Objects {
				n := inventoryNode(client.ObjectKeyFromObject(sy), g.Icon, k.Kind, o, idx, f.Open)
				v.Total++
				n.note(kinds, healths)
				syncs[n.Sync] = true
				if f.passes(n) {
					g.Nodes = append(g.Nodes, n)
				}
			}
			if len(g.Nodes) == 0 {
				continue
			}
			v.Shown += len(g.Nodes)
			g.Counts, g.Worst, g.Open = countsOf(g.Nodes), worstOf(g.Nodes), len(g.Nodes) <= collapseAt || f.Any() || f.Open
			v.Groups = append(v.Groups, g)
		}
	}
	v.Kinds, v.Healths, v.Syncs = sortedKeys(kinds), sortedKeys(healths), sortedKeys(syncs)
	return v
}

// ownedPanel is where the panels of owned objects are: the Sync's, in the
// namespace of their owner.
type ownedPanel struct {
	sync      client.ObjectKey
	namespace string
}

// inventoryNode is the node of object o of the Sync key, of kind (as the tree
// words it) and icon, with what it owns (found in idx) open, or folded when
// many and not open.
func inventoryNode(key client.ObjectKey, icon, kind string, o v1alpha1.ResourceStatus, idx *ownedIndex, open bool) graphNode {
	n := graphNode{
		Icon: icon, Kind: kind, Name: o.Name, Sync: orDash(string(o.Sync)), Health: orDash(string(o.Health)),
		Message: oneLine(o.Message), ObjectURL: objectPath(key, o.ObjectRef),
	}
	owned, more := idx.children(o.Group, o.Kind, o.Namespace, o.Name, 0)
	n.Children, n.More = graphNodesOf(owned, ownedPanel{key, o.Namespace}, open), more
	n.Counts, n.Worst, n.Open = countsOf(n.Children), worstOf(n.Children), open || len(n.Children) <= collapseAt
	if o.Sync == v1alpha1.SyncStatusOutOfSync {
		n.DiffURL = diffPath(key, o.Key())
	}
	return n
}

// graphNodesOf are the owned objects as nodes of the graph, those of more than
// collapseAt folded unless open.
func graphNodesOf(owned []ownedNode, at ownedPanel, open bool) []graphNode {
	out := make([]graphNode, 0, len(owned))
	for _, o := range owned {
		n := graphNode{Icon: iconOf(o.Kind), Kind: o.Kind, Name: o.Name, Health: orDash(o.Health), Message: o.Message, More: o.More}
		for _, gvk := range ownedKinds {
			if gvk.Kind == o.Kind {
				n.ObjectURL = objectPath(at.sync, v1alpha1.ObjectRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: at.namespace, Name: o.Name})
			}
		}
		n.Children = graphNodesOf(o.Owned, at, open)
		n.Counts, n.Worst, n.Open = countsOf(n.Children), worstOf(n.Children), open || len(n.Children) <= collapseAt
		out = append(out, n)
	}
	return out
}

// note records the kinds and healths of n and what it owns.
func (n graphNode) note(kinds, healths map[string]bool) {
	kinds[n.Kind] = true
	healths[n.Health] = true
	for _, c := range n.Children {
		c.note(kinds, healths)
	}
}

// passes says whether n is kept by the filter.
func (f graphFilter) passes(n graphNode) bool {
	if f.Sync != "" && n.Sync != f.Sync {
		return false
	}
	return n.has(func(m graphNode) bool { return f.Kind == "" || m.Kind == f.Kind }) &&
		n.has(func(m graphNode) bool { return f.Health == "" || m.Health == f.Health })
}

// has says whether n, or an object it owns, is as want says.
func (n graphNode) has(want func(graphNode) bool) bool {
	if want(n) {
		return true
	}
	return slices.ContainsFunc(n.Children, func(c graphNode) bool { return c.has(want) })
}

// countsOf words nodes by health, most first: "38 Healthy, 2 Progressing".
func countsOf(nodes []graphNode) string {
	if len(nodes) == 0 {
		return ""
	}
	by := map[string]int{}
	for _, n := range nodes {
		by[n.Health]++
	}
	healths := sortedKeys(by)
	slices.SortStableFunc(healths, func(a, b string) int { return by[b] - by[a] })
	parts := make([]string, 0, len(healths))
	for _, h := range healths {
		parts = append(parts, fmt.Sprintf("%d %s", by[h], h))
	}
	return strings.Join(parts, ", ")
}

// concern ranks healths by how much they ask a person to look: what is broken,
// then what is on its way or unknown, then what is well.
var concern = map[string]int{
	string(v1alpha1.HealthDegraded): 4, string(v1alpha1.HealthMissing): 4,
	string(v1alpha1.HealthProgressing): 3, string(v1alpha1.HealthUnknown): 2, string(v1alpha1.HealthSuspended): 2,
	string(v1alpha1.HealthHealthy): 1,
}

// worstOf is the health of nodes that most asks to look, "" for none.
func worstOf(nodes []graphNode) string {
	worst := ""
	for _, n := range nodes {
		if concern[n.Health] > concern[worst] {
			worst = n.Health
		}
	}
	return worst
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// icons name the symbol of templates/icons.html for each common kind (its
// name before any group); another kind has the generic one.
var icons = map[string]string{
	"Deployment": "deploy", "ReplicaSet": "rs", "Pod": "pod", "StatefulSet": "sts", "DaemonSet": "ds",
	"Job": "job", "CronJob": "cronjob", "Service": "svc", "Ingress": "ing", "ConfigMap": "cm", "Secret": "secret",
	"Namespace": "ns", "ServiceAccount": "sa", "PersistentVolumeClaim": "pvc", "HorizontalPodAutoscaler": "hpa",
	"Role": "rbac", "RoleBinding": "rbac", "ClusterRole": "rbac", "ClusterRoleBinding": "rbac", "NetworkPolicy": "netpol",
	"CustomResourceDefinition": "crd", "EndpointSlice": "svc",
}

// iconOf is the icon of kind ("Deployment.apps" or "Deployment").
func iconOf(kind string) string {
	base, _, _ := strings.Cut(kind, ".")
	if i, ok := icons[base]; ok {
		return "i-" + i
	}
	return "i-object"
}

// graphPath is the page of the graph of the Sync key.
func graphPath(key client.ObjectKey) string {
	return "/syncs/" + key.Namespace + "/" + key.Name + "/graph"
}
