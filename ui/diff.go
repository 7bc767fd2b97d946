package ui

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/plan"
)

// Renderer renders a Sync's source as the agent would (the revision its
// spec.source.ref names now, its Helm values, its decryption; the compare page
// gives it a copy of the Sync whose ref names a commit of its history) and returns the objects the Sync manages. It
// reads whatever the render needs (the repository's credentials, values, keys)
// through user, with the user's rights, and the cluster's capabilities through
// cfg, the user's config. `tether ui` gives the renderer `tether diff` uses.
type Renderer func(ctx context.Context, user client.Client, cfg *rest.Config, sy *v1alpha1.Sync) ([]*unstructured.Unstructured, error)

// Bounds of one diff page: the objects it compares, the text shown of each
// object's diff, how long the render and the dry-runs may take, and how many
// diffs the server computes at once (each fetches and renders a repository).
const (
	maxDiffObjects = 50
	maxDiffBytes   = 64 << 10
	diffTimeout    = 2 * time.Minute
	diffSlots      = 2
)

// diffView is what the diff page shows.
type diffView struct {
	Row     row
	SyncURL string
	Objects []objectDiffView
	More    int    // OutOfSync objects beyond maxDiffObjects, not compared
	Note    string // why nothing is compared, when nothing is
}

// objectDiffView is one object's diff: its state as words (State, "differs",
// "missing", "no difference", "failed", "left git"), a note, and the unified
// diff's lines, each classed for colour.
type objectDiffView struct {
	ID, Object, State, Note string
	Lines                   []diffLine
	Truncated               bool
}

type diffLine struct {
	Class, Text string
}

// diffPage shows the diff of the Sync's OutOfSync objects (the status says
// which), or of the one object ?object= names by its key: what git declares
// now, rendered as `tether diff` renders it and dry-run by the API server as the
// user, against the live objects; Secret values masked (plan.ObjectDiff).
func (s *Server) diffPage(w http.ResponseWriter, r *http.Request) {
	sy, key, found := s.syncOf(w, r)
	if !found {
		return
	}
	v := viewerOf(r)
	page := diffView{Row: rowOf(sy), SyncURL: syncPath(key)}
	wanted, found := diffTargets(sy, r.URL.Query().Get("object"))
	if !found {
		s.render(w, http.StatusNotFound, "message", messagePage{Title: "Refused", Message: "Sync " + key.String() + " lists no such object.", Back: syncPath(key)})
		return
	}
	if len(wanted) > maxDiffObjects {
		page.More, wanted = len(wanted)-maxDiffObjects, wanted[:maxDiffObjects]
	}
	switch {
	case len(wanted) == 0:
		page.Note = "The agent found no object of this Sync OutOfSync when it last compared them with git."
		s.render(w, http.StatusOK, "diff", page)
		return
	case s.opts.Render == nil:
		s.render(w, http.StatusNotImplemented, "message", messagePage{Title: "Failed", Message: "This server cannot render a Sync's source, so it shows no diff.", Back: syncPath(key)})
		return
	}
	ctx, done, ok := s.renderSlot(r)
	if !ok {
		return
	}
	defer done()
	objs, err := s.opts.Render(ctx, v.client, v.cfg, sy)
	if err != nil {
		s.render(w, http.StatusBadGateway, "message", messagePage{Title: "Failed", Message: "Rendering the source of Sync " + key.String() + ": " + err.Error(), Back: syncPath(key)})
		return
	}
	page.Objects = compare(ctx, v.client, sy, objs, wanted)
	s.render(w, http.StatusOK, "diff", page)
}

// renderSlot takes one of the server's slots for a render (each fetches and
// renders a repository) and bounds the render and what follows it (dry-runs)
// by diffTimeout; done gives both back. ok is false when the request ended
// while it waited.
func (s *Server) renderSlot(r *http.Request) (ctx context.Context, done func(), ok bool) {
	select {
	case s.diffs <- struct{}{}:
	case <-r.Context().Done():
		return nil, nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), diffTimeout)
	return ctx, func() { cancel(); <-s.diffs }, true
}

// diffTargets are the objects to diff: the one whose key is object, or when
// object is "" those the status says are OutOfSync. found is false when the
// Sync lists no object of that key.
func diffTargets(sy *v1alpha1.Sync, object string) (wanted []v1alpha1.ObjectRef, found bool) {
	for _, o := range plan.InventoryDetail(sy.Status) {
		switch {
		case object != "" && o.Key() == object:
			return []v1alpha1.ObjectRef{o.ObjectRef}, true
		case object == "" && o.Sync == v1alpha1.SyncStatusOutOfSync:
			wanted = append(wanted, o.ObjectRef)
		}
	}
	return wanted, object == ""
}

// compare dry-runs, as the user, the apply the agent would make of the rendered
// objects that are wanted (plan.ForApply: ignore rules, fields given up), and
// words each wanted object's difference.
func compare(ctx context.Context, user client.Client, sy *v1alpha1.Sync, objs []*unstructured.Unstructured, wanted []v1alpha1.ObjectRef) []objectDiffView {
	opts := plan.ForApply(sy, objs, apply.DefaultOptions(), sy.Status.FieldsGivenUp)
	opts.DryRun = true
	var subset []*unstructured.Unstructured
	for _, o := range objs {
		if rendersAny(o, wanted, opts.DefaultNamespace) {
			subset = append(subset, o)
		}
	}
	changes := map[string]apply.Change{}
	if len(subset) > 0 {
		cs, _ := apply.NewManager(user, apply.ManagerOptions{}).ApplyAll(ctx, subset, opts) // its failures are in cs
		for _, c := range cs.Changes {
			changes[c.Object.Key()] = c
		}
	}
	out := make([]objectDiffView, 0, len(wanted))
	for i, ref := range wanted {
		v := objectDiffView{ID: "diff-" + strconv.Itoa(i), Object: ref.String()}
		c, ok := changes[ref.Key()]
		switch {
		case !ok:
			v.State, v.Note = "left git", "Git does not declare it any more: a sync would prune it, unless it is protected or prune is off."
		case c.Action == apply.ActionFailed:
			v.State, v.Note = "failed", "The dry-run failed: "+oneLine(c.Err.Error())
		case c.Action == apply.ActionUnchanged:
			v.State, v.Note = "no difference", "The live object matches git now (the status is from the agent's last comparison)."
		default:
			v.State = "differs"
			if c.Action == apply.ActionCreated {
				v.State = "missing"
			}
			v.Lines, v.Truncated, v.Note = diffLinesOf(c)
		}
		out = append(out, v)
	}
	return out
}

// rendersAny reports whether o may be one of refs. A namespaced object that
// names no namespace gets def when applied; its scope is not known here, so
// it is kept for either.
func rendersAny(o *unstructured.Unstructured, refs []v1alpha1.ObjectRef, def string) bool {
	gvk := o.GroupVersionKind()
	for _, r := range refs {
		if r.Group != gvk.Group || r.Kind != gvk.Kind || r.Name != o.GetName() {
			continue
		}
		if ns := o.GetNamespace(); ns == r.Namespace || (ns == "" && (r.Namespace == def || r.Namespace == "")) {
			return true
		}
	}
	return false
}

// diffLinesOf is the unified diff of one change, cut at maxDiffBytes, each line
// classed: "add", "del", "hunk", "head" or "" for context.
func diffLinesOf(c apply.Change) (lines []diffLine, truncated bool, note string) {
	text, err := plan.ObjectDiff(c)
	if err != nil {
		return nil, false, "The diff could not be written: " + oneLine(err.Error())
	}
	return linesOf(text)
}

// linesOf is a unified diff's text cut at maxDiffBytes, each line classed.
func linesOf(text string) (lines []diffLine, truncated bool, note string) {
	if len(text) > maxDiffBytes {
		text, truncated = text[:strings.LastIndexByte(text[:maxDiffBytes], '\n')+1], true
		note = "The diff is longer than " + strconv.Itoa(maxDiffBytes>>10) + " KiB: its start is shown; `tether diff` prints it whole."
	}
	for _, l := range strings.SplitAfter(text, "\n") {
		if l == "" {
			continue
		}
		lines = append(lines, diffLine{Class: lineClass(l), Text: strings.TrimSuffix(l, "\n")})
	}
	return lines, truncated, note
}

func lineClass(l string) string {
	switch {
	case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "):
		return "head"
	case strings.HasPrefix(l, "@@"):
		return "hunk"
	case strings.HasPrefix(l, "+"):
		return "add"
	case strings.HasPrefix(l, "-"):
		return "del"
	}
	return ""
}

// diffPath is the path of the diff page of a Sync, of one object when object
// (a key) is not "".
func diffPath(key client.ObjectKey, object string) string {
	p := syncPath(key) + "/diff"
	if object != "" {
		p += "?object=" + url.QueryEscape(object)
	}
	return p
}
