package ui

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/source"
)

// Bounds of the text of one row: a subject or a message is one line.
const (
	maxSubject = 100
	maxMessage = 200
)

// row is one Sync as the fleet page and the live stream show it. Every field is
// text, escaped where the page writes it.
type row struct {
	Key         string `json:"key"` // namespace/name
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	Sync        string `json:"sync"`
	Health      string `json:"health"`
	Ready       string `json:"ready"`
	Revision    string `json:"revision"`
	Subject     string `json:"subject"`
	LastApplied string `json:"lastApplied"`
	Suspended   string `json:"suspended"` // "suspended" or ""
	Pinned      string `json:"pinned"`
	// SyncSet names the SyncSet that made the Sync (its tether.dev/syncset
	// label), "" for a Sync written by hand.
	SyncSet string `json:"syncSet"`
	// Cluster names the cluster the Sync applies to when it is not the
	// agent's own (spec.destination), "" for the agent's own.
	Cluster string `json:"cluster"`
	// SignedBy is who signed the applied revision (spec.source.verify), ""
	// when it is not verified.
	SignedBy       string `json:"signedBy"`
	FailingReason  string `json:"failingReason"`
	FailingMessage string `json:"failingMessage"`
}

// rowOf is the row of s, worded as `tether get` words it (package plan).
func rowOf(s *v1alpha1.Sync) row {
	r := row{
		Key: s.Namespace + "/" + s.Name, Namespace: s.Namespace, Name: s.Name,
		Sync: orDash(string(s.Status.Sync)), Health: orDash(string(s.Status.Health)), Ready: plan.ReadyStatus(s),
		Revision: orDash(plan.ShortRevision(s.Status.LastAppliedRevision)),
		Subject:  source.OneLine(plan.AppliedSubject(s), maxSubject),
		Pinned:   source.OneLine(s.GetAnnotations()[v1alpha1.PinRevisionAnnotation], 80),
		SyncSet:  source.OneLine(s.GetLabels()[v1alpha1.SyncSetLabel], 80),
		SignedBy: source.OneLine(s.Status.LastAppliedSigner, 300),
	}
	if t := s.Status.LastAppliedTime; t != nil {
		r.LastApplied = t.UTC().Format(time.DateTime) + " UTC"
	}
	if s.Spec.Suspend {
		r.Suspended = "suspended"
	}
	if s.Spec.Destination.IsRemote() {
		r.Cluster = source.OneLine(s.Spec.Destination.ClusterName(), 80)
	}
	reason, msg := plan.Failing(s)
	r.FailingReason, r.FailingMessage = source.OneLine(reason, 80), source.OneLine(msg, maxMessage)
	return r
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// statusFilters are the values of the fleet's status filter, each with whether a
// row passes it.
var statusFilters = []struct {
	Value string
	pass  func(row) bool
}{
	{"OutOfSync", func(r row) bool { return r.Sync == string(v1alpha1.SyncStatusOutOfSync) }},
	{"NotReady", func(r row) bool { return r.Ready != "True" }},
	{"Failing", func(r row) bool { return r.FailingReason != "" }},
	{"Degraded", func(r row) bool { return r.Health == string(v1alpha1.HealthDegraded) }},
	{"Progressing", func(r row) bool { return r.Health == string(v1alpha1.HealthProgressing) }},
	{"Suspended", func(r row) bool { return r.Suspended != "" }},
}

// count is one figure of the fleet's head.
type count struct {
	Label string `json:"label"`
	N     int    `json:"n"`
}

// fleetGroup is the Syncs of one group (a namespace, by default) that pass
// the filter, with the counts of all the group's Syncs.
type fleetGroup struct {
	// Namespace is the group's namespace when the fleet is grouped by
	// namespace, "" otherwise; Key names the group in either case (see
	// groupKey), Title heads it and Label names it for a screen reader.
	Namespace, Key, Title, Label string
	Counts                       []count
	Rows                         []row
}

// fleetPage is what the fleet page shows.
type fleetPage struct {
	Rows       []row
	Groups     []fleetGroup // Rows by namespace, in order
	Counts     []count
	Namespaces []string // those of the Syncs watched, for the filter
	Statuses   []string
	Namespace  string // the namespace filter, "" for all
	Status     string // the status filter, "" for all
	Label      string // the label selector, "" for all
	LabelError string // why Label is no selector
	Search     string // words the Sync's namespace/name holds, "" for all
	// View is how the Syncs are drawn: viewTable or viewTiles; Group what
	// they are grouped by (groupByNamespace, groupBySyncSet, groupByCluster).
	View, Group string
	// Views and Groupings are the links to the page drawn another way or
	// grouped by another thing, each keeping the filters.
	Views, Groupings []choice
	// OnlyNamespace is the one namespace watched, "" for every namespace;
	// Narrowed says the user may not list every namespace.
	OnlyNamespace string
	Narrowed      bool
	// SignOut is the CSRF token of the sign-out form, shown in a cluster
	// only (with User, who is signed in).
	SignOut, User string
}

// fleet lists the Syncs the user may list, from the shared watch, filtered by the
// query's namespace and status.
func (s *Server) fleet(w http.ResponseWriter, r *http.Request) {
	list := &v1alpha1.SyncList{}
	v := viewerOf(r)
	if err := v.cache.List(r.Context(), list); err != nil {
		s.refuse(w, r, http.StatusBadGateway, "Listing Syncs failed: "+err.Error())
		return
	}
	q := r.URL.Query()
	page := fleetPageOf(list.Items, fleetFilter{namespace: q.Get("namespace"), status: q.Get("status"), label: q.Get("label"), search: q.Get("q"),
		view: q.Get("view"), group: q.Get("group")})
	page.OnlyNamespace, page.Narrowed = v.scope.namespace, v.scope.narrowed
	if s.opts.InCluster {
		page.SignOut, page.User = sessionOf(r).csrf, v.user
	}
	s.render(w, http.StatusOK, "fleet", page)
}

// fleetFilter is what the fleet page's query asks for; "" passes every Sync.
type fleetFilter struct {
	namespace string
	status    string // one of statusFilters
	label     string // a label selector, as kubectl get -l takes
	search    string // words that namespace/name must each hold, any case
	view      string // viewTable ("", the default) or viewTiles
	group     string // groupByNamespace ("", the default), groupBySyncSet or groupByCluster
}

// found says whether key holds every word of search, in any case.
func found(key, search string) bool {
	key = strings.ToLower(key)
	for _, w := range strings.Fields(strings.ToLower(search)) {
		if !strings.Contains(key, w) {
			return false
		}
	}
	return true
}

// fleetPageOf is the fleet page of syncs: the rows that pass the filter, in
// order, and the counts of all. A label selector that does not parse filters
// nothing, and the page says why.
func fleetPageOf(syncs []v1alpha1.Sync, f fleetFilter) fleetPage {
	page := fleetPage{Namespace: f.namespace, Status: f.status, Label: f.label, Search: f.search, View: viewOf(f.view), Group: groupingOf(f.group)}
	pass := statusFilter(f.status)
	selector, err := labels.Parse(f.label)
	if err != nil {
		page.LabelError, selector = err.Error(), labels.Everything()
	}
	seen := map[string]bool{}
	all := make([]row, 0, len(syncs))
	for i := range syncs {
		rw := rowOf(&syncs[i])
		all = append(all, rw)
		if !seen[rw.Namespace] {
			seen[rw.Namespace] = true
			page.Namespaces = append(page.Namespaces, rw.Namespace)
		}
		if (f.namespace == "" || rw.Namespace == f.namespace) && pass(rw) && found(rw.Key, f.search) && selector.Matches(labels.Set(syncs[i].Labels)) {
			page.Rows = append(page.Rows, rw)
		}
	}
	// By group, then by namespace, and in a namespace the Syncs of each
	// SyncSet together (those written by hand first), as `tether get` lists
	// them.
	slices.SortFunc(page.Rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(groupKey(page.Group, a), groupKey(page.Group, b)),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.SyncSet, b.SyncSet), cmp.Compare(a.Name, b.Name))
	})
	slices.Sort(page.Namespaces)
	for _, f := range statusFilters {
		page.Statuses = append(page.Statuses, f.Value)
	}
	page.Counts = countRows(all)
	page.Groups = groupRows(page.Rows, page.Group, countByGroup(all, page.Group))
	page.Views, page.Groupings = fleetChoices(f, page.View, page.Group, all)
	return page
}

// groupRows splits rows, sorted by group, into one group per key of
// grouping, each with its counts.
func groupRows(rows []row, grouping string, counts map[string][]count) []fleetGroup {
	var groups []fleetGroup
	for _, r := range rows {
		key := groupKey(grouping, r)
		if len(groups) == 0 || groups[len(groups)-1].Key != key {
			groups = append(groups, newFleetGroup(grouping, r, counts[key]))
		}
		g := &groups[len(groups)-1]
		g.Rows = append(g.Rows, r)
	}
	return groups
}

// countByGroup is countRows of each group's rows, by the group's key.
func countByGroup(rows []row, grouping string) map[string][]count {
	byKey := map[string][]row{}
	for _, r := range rows {
		key := groupKey(grouping, r)
		byKey[key] = append(byKey[key], r)
	}
	counts := make(map[string][]count, len(byKey))
	for key, rs := range byKey {
		counts[key] = countRows(rs)
	}
	return counts
}

// statusFilter is the test of the status filter value; an unknown value passes
// every row.
func statusFilter(value string) func(row) bool {
	for _, f := range statusFilters {
		if f.Value == value {
			return f.pass
		}
	}
	return func(row) bool { return true }
}

// countRows is the fleet's head: how many Syncs, and how many pass each filter.
func countRows(rows []row) []count {
	counts := []count{{Label: "Syncs", N: len(rows)}}
	for _, f := range statusFilters {
		n := 0
		for _, r := range rows {
			if f.pass(r) {
				n++
			}
		}
		counts = append(counts, count{Label: f.Value, N: n})
	}
	return counts
}
