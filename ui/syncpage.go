package ui

import (
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/source"
)

// syncView is what the Sync page shows.
type syncView struct {
	Row        row
	CSRF       string
	Done       string // what the last action did, worded by doneMessages
	Conditions []conditionView
	Tree       []treeNamespace
	TreeGaps   []string // what could not be read for the tree
	Events     []eventView
	EventGaps  []string
	History    []historyView
	// Compare are the revisions the compare form offers, none when fewer than two.
	Compare   []compareChoice
	Suspended bool
	// GraphURL is the page of the graph of its objects.
	GraphURL string
	// DiffURL is the page of the diff of every OutOfSync object, "" when the
	// status says none is.
	DiffURL string
}

type conditionView struct {
	Type, Status, Reason, Message, Since string
	Stale                                bool // written for an older spec
}

type treeNamespace struct {
	Namespace string
	Kinds     []treeKind
}

type treeKind struct {
	Kind    string
	Objects []treeObject
}

type treeObject struct {
	Name, Sync, Health, Message string
	DiffURL                     string // its diff's page, when it is OutOfSync
	Owned                       []ownedNode
	More                        int
}

type eventView struct {
	Time, Type, Reason, Object, Message string
}

type historyView struct {
	Revision, AppliedAt, Health, Message, Author string
	// Reached says the health it reached and how long it took to: "Healthy
	// after 42s", "not Healthy yet: Progressing".
	Reached string
	Current bool
	// To is the revision a rollback to this entry names, "" when it can
	// name none (the current one, or a revision without a commit).
	To string
	// CompareURL is the page of its differences with the current revision,
	// "" when there is none to compare.
	CompareURL string
}

// compareChoice is a revision the compare form offers.
type compareChoice struct {
	Revision, Label string
}

// doneMessages word what an action did, by the done query parameter the action
// redirects with; another value says nothing.
var doneMessages = map[string]string{
	"reconcile": "Reconcile requested: the agent looks at git now.",
	"suspend":   "Suspended: nothing is fetched, applied or pruned until resumed.",
	"resume":    "Resumed, and a reconcile requested.",
	"rollback":  "Pinned to the revision chosen: the agent applies it, and stays on it until the pin is removed.",
	"unpin":     "Pin removed: the Sync follows its ref again.",
}

// syncOf reads, as the user, the Sync the request's path names
// (/syncs/{namespace}/{name}/…). When it cannot be read, it answers the request
// with the API server's refusal and found is false.
func (s *Server) syncOf(w http.ResponseWriter, r *http.Request) (sy *v1alpha1.Sync, key client.ObjectKey, found bool) {
	sy = &v1alpha1.Sync{}
	key = client.ObjectKey{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	if err := viewerOf(r).client.Get(r.Context(), key, sy); err != nil {
		s.apiRefusal(w, r, "Reading Sync "+key.String(), err, "")
		return nil, key, false
	}
	return sy, key, true
}

// syncPage shows one Sync, read as the user: its conditions, the tree of its
// objects and what they own, its Events and its history.
func (s *Server) syncPage(w http.ResponseWriter, r *http.Request) {
	sy, key, found := s.syncOf(w, r)
	if !found {
		return
	}
	v := syncView{Row: rowOf(sy), CSRF: sessionOf(r).csrf, Done: doneMessages[r.URL.Query().Get("done")], Suspended: sy.Spec.Suspend}
	v.Conditions, v.GraphURL = conditionsOf(sy), graphPath(key)
	v.Tree, v.TreeGaps = s.treeOf(r, sy)
	if wanted, _ := diffTargets(sy, ""); len(wanted) > 0 {
		v.DiffURL = diffPath(key, "")
	}
	v.Events, v.EventGaps = s.eventsOf(r, sy)
	v.History = historyOf(sy)
	if c := compareChoices(sy); len(c) > 1 {
		v.Compare = c
	}
	s.render(w, http.StatusOK, "sync", v)
}

func conditionsOf(sy *v1alpha1.Sync) []conditionView {
	out := make([]conditionView, 0, len(sy.Status.Conditions))
	for _, c := range sy.Status.Conditions {
		out = append(out, conditionView{
			Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message,
			Since: c.LastTransitionTime.UTC().Format(time.DateTime) + " UTC", Stale: c.ObservedGeneration != sy.Generation,
		})
	}
	return out
}

// treeOf is the Sync's tree as `tether tree` groups it (plan.Tree), with the
// objects its workloads own beneath them.
func (s *Server) treeOf(r *http.Request, sy *v1alpha1.Sync) ([]treeNamespace, []string) {
	idx := readOwned(r.Context(), viewerOf(r).client, ownerNamespaces(plan.Inventory(sy.Status)))
	var out []treeNamespace
	for _, ns := range plan.Tree(sy) {
		tn := treeNamespace{Namespace: ns.Namespace}
		for _, k := range ns.Kinds {
			tk := treeKind{Kind: k.Kind}
			for _, o := range k.Objects {
				obj := treeObject{Name: o.Name, Sync: orDash(string(o.Sync)), Health: orDash(string(o.Health)), Message: oneLine(o.Message)}
				obj.Owned, obj.More = idx.children(o.Group, o.Kind, o.Namespace, o.Name, 0)
				if o.Sync == v1alpha1.SyncStatusOutOfSync {
					obj.DiffURL = diffPath(client.ObjectKeyFromObject(sy), o.Key())
				}
				tk.Objects = append(tk.Objects, obj)
			}
			tn.Kinds = append(tn.Kinds, tk)
		}
		out = append(out, tn)
	}
	return out, idx.unreadable
}

// maxEvents bounds the Events the page shows, the newest kept.
const maxEvents = 100

// eventsOf lists, as the user, the Events of the Sync and its objects
// (plan.EventsOf), newest first.
func (s *Server) eventsOf(r *http.Request, sy *v1alpha1.Sync) ([]eventView, []string) {
	scope := plan.EventsOf(sy)
	var events []corev1.Event
	var gaps []string
	for _, ns := range scope.Namespaces() {
		list := &corev1.EventList{}
		if err := viewerOf(r).client.List(r.Context(), list, client.InNamespace(ns)); err != nil {
			gaps = append(gaps, "Events in "+ns+": "+err.Error())
			continue
		}
		for i := range list.Items {
			if scope.Has(&list.Items[i]) {
				events = append(events, list.Items[i])
			}
		}
	}
	slices.SortStableFunc(events, func(a, b corev1.Event) int { return plan.EventTime(&b).Compare(plan.EventTime(&a)) })
	events = events[:min(len(events), maxEvents)]
	out := make([]eventView, 0, len(events))
	for i := range events {
		e := &events[i]
		o := e.InvolvedObject
		out = append(out, eventView{
			Time: plan.EventTime(e).UTC().Format(time.DateTime) + " UTC", Type: e.Type, Reason: e.Reason,
			Object: o.Kind + "/" + o.Namespace + "/" + o.Name, Message: source.OneLine(e.Message, maxMessage),
		})
	}
	return out, gaps
}

func historyOf(sy *v1alpha1.Sync) []historyView {
	key := client.ObjectKeyFromObject(sy)
	out := make([]historyView, 0, len(sy.Status.History))
	for i, e := range sy.Status.History {
		out = append(out, historyView{
			Revision: plan.ShortRevision(source.OneLine(e.Revision, 80)), AppliedAt: e.AppliedAt.UTC().Format(time.DateTime) + " UTC",
			Health: orDash(string(e.Health)), Message: source.OneLine(e.Message, maxSubject), Author: source.OneLine(e.Author, maxSubject),
			Reached: reachedOf(e, i == 0), Current: i == 0,
		})
		if i > 0 && plan.CommitOf(e.Revision) != "" {
			out[i].To = e.Revision
			if current := sy.Status.History[0].Revision; plan.CommitOf(current) != "" {
				out[i].CompareURL = comparePath(key, e.Revision, current)
			}
		}
	}
	return out
}

// reachedOf words the health a revision reached, and how long it took to
// become Healthy (plan.HealthyAfter, as `tether history` shows it).
func reachedOf(e v1alpha1.HistoryEntry, current bool) string {
	health := source.OneLine(string(e.Health), 20)
	switch took := plan.HealthyAfter(e); {
	case took != "":
		return "Healthy after " + took
	case e.Health == v1alpha1.HealthHealthy:
		return "Healthy"
	case current:
		return "not Healthy yet: " + orDash(health)
	}
	return "never Healthy while applied: reached " + orDash(health)
}

// compareChoices are the revisions of the history the compare form offers:
// those of git, which name a commit to fetch.
func compareChoices(sy *v1alpha1.Sync) []compareChoice {
	var out []compareChoice
	for _, e := range sy.Status.History {
		if plan.CommitOf(e.Revision) == "" {
			continue
		}
		label := plan.ShortRevision(source.OneLine(e.Revision, 80)) + " " + source.OneLine(e.Message, maxSubject)
		out = append(out, compareChoice{Revision: e.Revision, Label: label})
	}
	return out
}

// oneLine makes a message one line of at most maxMessage bytes.
func oneLine(msg string) string { return source.OneLine(msg, maxMessage) }

// apiRefusal answers for a request the API server refused or failed: 403 when it
// forbade it, 404 when there is no such object, 502 otherwise, with its message.
//
// In a cluster, 401 means the API server no longer accepts the user's token
// (it expired, or its ServiceAccount is gone): the session ends, and the
// browser is sent to sign in again.
func (s *Server) apiRefusal(w http.ResponseWriter, r *http.Request, what string, err error, back string) {
	if s.opts.InCluster && apierrors.IsUnauthorized(err) {
		s.endSession(w, r)
		return
	}
	code := http.StatusBadGateway
	switch {
	case apierrors.IsForbidden(err):
		code = http.StatusForbidden
	case apierrors.IsNotFound(err):
		code = http.StatusNotFound
	}
	s.render(w, code, "message", messagePage{Title: titleOf(code), Message: what + ": " + err.Error(), Back: back})
}
