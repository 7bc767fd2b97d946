package ui

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/source"
)

// compareView is what the compare page shows: the objects that differ between
// two revisions of a Sync's history.
type compareView struct {
	Row      row
	SyncURL  string
	From, To compareEnd
	Objects  []objectDiffView
	Same     int    // objects both revisions render alike
	More     int    // differing objects beyond maxDiffObjects, not shown
	Note     string // why nothing is compared, when nothing is
}

// compareEnd is one of the two revisions compared.
type compareEnd struct {
	Revision, Short, Subject, Author string
}

// comparePage shows, object by object, how two revisions of the Sync's
// history differ: each commit is fetched and rendered as `tether diff`
// renders a Sync (as the user, with the Sync's spec as it is now, as a
// rollback to it would apply it), and every object one renders otherwise than
// the other is shown as a unified diff, Secret values masked
// (plan.RevisionDiff). Nothing is read from or dry-run against the cluster's
// objects.
func (s *Server) comparePage(w http.ResponseWriter, r *http.Request) {
	sy, key, found := s.syncOf(w, r)
	if !found {
		return
	}
	v := viewerOf(r)
	q := r.URL.Query()
	from, fromOK := historyRevision(sy.Status.History, q.Get("from"))
	to, toOK := historyRevision(sy.Status.History, q.Get("to"))
	if !fromOK || !toOK {
		s.render(w, http.StatusNotFound, "message", messagePage{Title: "Refused",
			Message: "Compare two git revisions of the history of Sync " + key.String() + ": from and to must each name one.", Back: syncPath(key)})
		return
	}
	page := compareView{Row: rowOf(sy), SyncURL: syncPath(key), From: endOf(from), To: endOf(to)}
	if s.opts.Render == nil {
		s.render(w, http.StatusNotImplemented, "message", messagePage{Title: "Failed", Message: "This server cannot render a Sync's source, so it compares no revisions.", Back: syncPath(key)})
		return
	}
	if plan.CommitOf(from.Revision) == plan.CommitOf(to.Revision) {
		page.Note = "Both name the same commit: there is no difference to show."
		s.render(w, http.StatusOK, "compare", page)
		return
	}
	ctx, done, ok := s.renderSlot(r)
	if !ok {
		return
	}
	defer done()
	renders := make([][]*unstructured.Unstructured, 2)
	for i, e := range []v1alpha1.HistoryEntry{from, to} {
		objs, err := s.opts.Render(ctx, v.client, v.cfg, atCommit(sy, plan.CommitOf(e.Revision)))
		if err != nil {
			s.render(w, http.StatusBadGateway, "message", messagePage{Title: "Failed",
				Message: "Rendering revision " + endOf(e).Short + " of Sync " + key.String() + ": " + err.Error(), Back: syncPath(key)})
			return
		}
		renders[i] = objs
	}
	page.Objects, page.Same, page.More = revisionDiffs(renders[0], renders[1], page.From.Short, page.To.Short)
	if len(page.Objects) == 0 {
		page.Note = "Both revisions render the same objects, alike."
	}
	s.render(w, http.StatusOK, "compare", page)
}

// historyRevision is the entry of history that rev names (its revision, or
// its commit), when it is a git revision.
func historyRevision(history []v1alpha1.HistoryEntry, rev string) (v1alpha1.HistoryEntry, bool) {
	if rev == "" {
		return v1alpha1.HistoryEntry{}, false
	}
	for _, e := range history {
		if c := plan.CommitOf(e.Revision); c != "" && (e.Revision == rev || c == rev) {
			return e, true
		}
	}
	return v1alpha1.HistoryEntry{}, false
}

func endOf(e v1alpha1.HistoryEntry) compareEnd {
	return compareEnd{
		Revision: e.Revision, Short: plan.ShortRevision(source.OneLine(e.Revision, 80)),
		Subject: source.OneLine(e.Message, maxSubject), Author: source.OneLine(e.Author, maxSubject),
	}
}

// atCommit is sy as if its ref named commit, for the renderer: what the agent
// renders when pinned to it (tether rollback --to).
func atCommit(sy *v1alpha1.Sync, commit string) *v1alpha1.Sync {
	out := sy.DeepCopy()
	out.Spec.Source.Ref = v1alpha1.GitRef{Commit: commit}
	return out
}

// revisionDiffs words how each object differs between the renders from and
// to: "changed", "added" or "removed", in the order of their keys, at most
// maxDiffObjects (more counts the rest); same counts the objects rendered alike.
func revisionDiffs(from, to []*unstructured.Unstructured, fromName, toName string) (out []objectDiffView, same, more int) {
	a, b := byRef(from), byRef(to)
	keys := make([]v1alpha1.ObjectRef, 0, len(a)+len(b))
	for ref := range a {
		keys = append(keys, ref)
	}
	for ref := range b {
		if _, ok := a[ref]; !ok {
			keys = append(keys, ref)
		}
	}
	slices.SortFunc(keys, v1alpha1.ObjectRef.CompareKey)
	for _, ref := range keys {
		text, err := plan.RevisionDiff(a[ref], b[ref], fromName, toName)
		if err == nil && text == "" {
			same++
			continue
		}
		if len(out) == maxDiffObjects {
			more++
			continue
		}
		v := objectDiffView{ID: "diff-" + strconv.Itoa(len(out)), Object: ref.String(), State: "changed"}
		switch {
		case a[ref] == nil:
			v.State = "added"
		case b[ref] == nil:
			v.State = "removed"
		}
		if err != nil {
			v.Note = "The diff could not be written: " + oneLine(err.Error())
		} else {
			v.Lines, v.Truncated, v.Note = linesOf(text)
		}
		out = append(out, v)
	}
	return out, same, more
}

// byRef indexes rendered objects by their reference (the namespace as the
// render gives it: both renders of one Sync name it alike).
func byRef(objs []*unstructured.Unstructured) map[v1alpha1.ObjectRef]*unstructured.Unstructured {
	out := make(map[v1alpha1.ObjectRef]*unstructured.Unstructured, len(objs))
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		out[v1alpha1.ObjectRef{Group: gvk.Group, Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()}] = o
	}
	return out
}

// comparePath is the path of the compare page of a Sync between two revisions.
func comparePath(key client.ObjectKey, from, to string) string {
	return syncPath(key) + "/compare?" + url.Values{"from": {from}, "to": {to}}.Encode()
}
