package ui

import (
	"net/url"
)

// The fleet's views (?view=): a table of one row per Sync, with every field
// (the default: its failing messages and commit subjects are what a person
// reads the fleet for), or tiles, one small box per Sync coloured by its
// worst state, to take in a large fleet at a glance.
const (
	viewTable = "table"
	viewTiles = "tiles"
)

// What the fleet's Syncs are grouped by (?group=): their namespace (the
// default), the SyncSet that made them (in its namespace), or the cluster
// they apply to.
const (
	groupByNamespace = "namespace"
	groupBySyncSet   = "syncset"
	groupByCluster   = "cluster"
)

// viewOf is the view value names; an unknown one is the table.
func viewOf(value string) string {
	if value == viewTiles {
		return viewTiles
	}
	return viewTable
}

// groupingOf is the grouping value names; an unknown one is by namespace.
func groupingOf(value string) string {
	switch value {
	case groupBySyncSet, groupByCluster:
		return value
	}
	return groupByNamespace
}

// groupKey is the key of r's group when the fleet is grouped by grouping:
// its namespace; its namespace and SyncSet ("ns/" for the Syncs written by
// hand); or its cluster ("" for the agent's own). The live stream's counts
// name groups by the same keys.
func groupKey(grouping string, r row) string {
	switch grouping {
	case groupBySyncSet:
		return r.Namespace + "/" + r.SyncSet
	case groupByCluster:
		return r.Cluster
	}
	return r.Namespace
}

// newFleetGroup is the empty group of r when grouped by grouping, with its
// counts, headed and named for it.
func newFleetGroup(grouping string, r row, counts []count) fleetGroup {
	g := fleetGroup{Key: groupKey(grouping, r), Counts: counts}
	switch {
	case grouping == groupBySyncSet && r.SyncSet != "":
		g.Title, g.Label = r.Namespace+" · SyncSet "+r.SyncSet, "SyncSet "+r.SyncSet+" in namespace "+r.Namespace
	case grouping == groupBySyncSet:
		g.Title, g.Label = r.Namespace+" · no SyncSet", "Syncs of no SyncSet in namespace "+r.Namespace
	case grouping == groupByCluster && r.Cluster != "":
		g.Title, g.Label = "cluster "+r.Cluster, "Cluster "+r.Cluster
	case grouping == groupByCluster:
		g.Title, g.Label = "the agent's own cluster", "The agent's own cluster"
	default:
		g.Namespace, g.Title, g.Label = r.Namespace, r.Namespace, "Namespace "+r.Namespace
	}
	return g
}

// choice is a link to the fleet drawn or grouped another way.
type choice struct {
	Label   string
	URL     string
	Current bool
}

// fleetChoices are the links to each view and each grouping of the fleet,
// each keeping f's filters and the other choice. Grouping by SyncSet is
// offered when a Sync of rows was made by one, by cluster when one applies
// to another cluster than the agent's.
func fleetChoices(f fleetFilter, view, grouping string, rows []row) (views, groupings []choice) {
	link := func(v, g string) string {
		q := url.Values{}
		for _, p := range []struct{ name, value string }{
			{"q", f.search}, {"namespace", f.namespace}, {"status", f.status}, {"label", f.label},
		} {
			if p.value != "" {
				q.Set(p.name, p.value)
			}
		}
		if v != viewTable {
			q.Set("view", v)
		}
		if g != groupByNamespace {
			q.Set("group", g)
		}
		if len(q) == 0 {
			return "/"
		}
		return "/?" + q.Encode()
	}
	for _, v := range []struct{ value, label string }{{viewTable, "Table"}, {viewTiles, "Tiles"}} {
		views = append(views, choice{Label: v.label, URL: link(v.value, grouping), Current: v.value == view})
	}
	offered := map[string]bool{groupByNamespace: true, grouping: true}
	for _, r := range rows {
		offered[groupBySyncSet] = offered[groupBySyncSet] || r.SyncSet != ""
		offered[groupByCluster] = offered[groupByCluster] || r.Cluster != ""
	}
	for _, g := range []struct{ value, label string }{{groupByNamespace, "namespace"}, {groupBySyncSet, "SyncSet"}, {groupByCluster, "cluster"}} {
		if !offered[g.value] {
			continue
		}
		groupings = append(groupings, choice{Label: g.label, URL: link(view, g.value), Current: g.value == grouping})
	}
	return views, groupings
}

// groupCounts are the counts of the fleet's groups, as the live stream sends
// them: by grouping, then by group key.
func groupCounts(rows []row) map[string]map[string][]count {
	return map[string]map[string][]count{
		groupByNamespace: countByGroup(rows, groupByNamespace),
		groupBySyncSet:   countByGroup(rows, groupBySyncSet),
		groupByCluster:   countByGroup(rows, groupByCluster),
	}
}
