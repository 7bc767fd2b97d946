package ui

import (
	"net/http"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

// uiFieldManager owns what the UI writes into a Sync with a patch of its own
// (the pin), as tether-cli does for the CLI: a Sync that applies Syncs leaves
// it alone.
const uiFieldManager = "tether-ui"

// tool names the UI in the Events that record its users' actions.
const tool = "tether ui"

// change is what one action does to a Sync it has read: the patch to make, and
// the Event that records it once made; or, when the Sync is in no state for it,
// why (and no patch).
type change struct {
	patch client.Patch
	event *corev1.Event
	why   string
}

// actions are what a POST may ask of a Sync, each the change `tether
// reconcile`, `suspend`, `resume` or `rollback` makes (package plan).
var actions = map[string]func(s *Server, r *http.Request, sy *v1alpha1.Sync) change{
	"reconcile": func(s *Server, r *http.Request, sy *v1alpha1.Sync) change {
		if sy.Spec.Suspend {
			return change{why: "it is suspended: resume it first"}
		}
		patch := client.MergeFrom(sy.DeepCopy())
		plan.RequestReconcile(sy, s.now())
		return change{patch: patch, event: plan.ActionEvent(sy, "reconcile", viewerOf(r).user, tool, s.now())}
	},
	"suspend": func(s *Server, r *http.Request, sy *v1alpha1.Sync) change {
		return s.suspension(viewerOf(r), sy, true, "suspend", "it is suspended already")
	},
	"resume": func(s *Server, r *http.Request, sy *v1alpha1.Sync) change {
		return s.suspension(viewerOf(r), sy, false, "resume", "it is not suspended")
	},
	// rollback pins the Sync to the revision of its history the form names
	// (field "to"), as `tether rollback --to` does.
	"rollback": func(s *Server, r *http.Request, sy *v1alpha1.Sync) change {
		if sy.Spec.Suspend {
			return change{why: "it is suspended: resume it first"}
		}
		to := r.PostFormValue("to")
		if to == "" {
			return change{why: "the form names no revision to roll back to"}
		}
		commit, err := plan.RollbackTarget(sy.Status.History, to)
		if err != nil {
			return change{why: err.Error()}
		}
		return s.pin(viewerOf(r), sy, commit)
	},
	// unpin removes the pin: the Sync follows its ref again (tether rollback --undo).
	"unpin": func(s *Server, r *http.Request, sy *v1alpha1.Sync) change {
		if _, pinned := sy.Annotations[v1alpha1.PinRevisionAnnotation]; !pinned {
			return change{why: "it is not pinned"}
		}
		return s.pin(viewerOf(r), sy, "")
	},
}

func (s *Server) suspension(v *viewer, sy *v1alpha1.Sync, suspend bool, action, already string) change {
	patch := client.MergeFrom(sy.DeepCopy())
	if !plan.SetSuspend(sy, suspend, s.now()) {
		return change{why: already}
	}
	return change{patch: patch, event: plan.ActionEvent(sy, action, v.user, tool, s.now())}
}

// pin is the change that pins sy to commit, or removes its pin for "".
func (s *Server) pin(v *viewer, sy *v1alpha1.Sync, commit string) change {
	return change{patch: client.RawPatch(types.MergePatchType, plan.PinPatch(commit)), event: plan.PinEvent(sy, commit, v.user, tool, s.now())}
}

// act makes the change an action asks of a Sync, as the user: the API server
// decides whether the user may, and a refusal is shown as one. Done, it sends the
// browser back to the Sync's page, which says what was done.
func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	action := r.PathValue("action")
	changeOf, known := actions[action]
	if !known {
		http.NotFound(w, r)
		return
	}
	sy, key, found := s.syncOf(w, r)
	if !found {
		return
	}
	v := viewerOf(r)
	c := changeOf(s, r, sy)
	if c.patch == nil {
		s.render(w, http.StatusConflict, "message", messagePage{
			Title: "Not done", Message: "Sync " + key.String() + " was not changed: " + c.why + ".", Back: syncPath(key),
		})
		return
	}
	if err := v.client.Patch(r.Context(), sy, c.patch, client.FieldOwner(uiFieldManager)); err != nil {
		s.apiRefusal(w, r, "The API server refused to "+action+" Sync "+key.String(), err, syncPath(key))
		return
	}
	// Done: an Event on the Sync says who asked. A user who may not create
	// Events still has the action done; the log says why none was recorded.
	if err := v.client.Create(r.Context(), c.event); err != nil {
		s.opts.Log.Info("the action was done but not recorded as an Event", "sync", key.String(), "action", action, "error", err.Error())
	}
	http.Redirect(w, r, syncPath(key)+"?done="+action, http.StatusSeeOther)
}

// syncPath is the path of a Sync's page.
func syncPath(key client.ObjectKey) string {
	return "/syncs/" + url.PathEscape(key.Namespace) + "/" + url.PathEscape(key.Name)
}
