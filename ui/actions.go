package ui

import (
	"net/http"
	"net/url"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

// actions are what a POST may ask of a Sync, each the change `tether reconcile`,
// `tether suspend` or `tether resume` makes (package plan); false when the Sync is
// in no state for it, with why.
var actions = map[string]func(s *Server, sy *v1alpha1.Sync) (ok bool, why string){
	"reconcile": func(s *Server, sy *v1alpha1.Sync) (bool, string) {
		if sy.Spec.Suspend {
			return false, "it is suspended: resume it first"
		}
		plan.RequestReconcile(sy, s.now())
		return true, ""
	},
	"suspend": func(s *Server, sy *v1alpha1.Sync) (bool, string) {
		return plan.SetSuspend(sy, true, s.now()), "it is suspended already"
	},
	"resume": func(s *Server, sy *v1alpha1.Sync) (bool, string) {
		return plan.SetSuspend(sy, false, s.now()), "it is not suspended"
	},
}

// act makes the change an action asks of a Sync, as the user: the API server
// decides whether the user may, and a refusal is shown as one. Done, it sends the
// browser back to the Sync's page, which says what was done.
func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	action := r.PathValue("action")
	change, known := actions[action]
	if !known {
		http.NotFound(w, r)
		return
	}
	key := client.ObjectKey{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	sy := &v1alpha1.Sync{}
	if err := s.client.Get(r.Context(), key, sy); err != nil {
		s.apiRefusal(w, "Reading Sync "+key.String(), err, "")
		return
	}
	patch := client.MergeFrom(sy.DeepCopy())
	if ok, why := change(s, sy); !ok {
		s.render(w, http.StatusConflict, "message", messagePage{
			Title: "Not done", Message: "Sync " + key.String() + " was not changed: " + why + ".", Back: syncPath(key),
		})
		return
	}
	if err := s.client.Patch(r.Context(), sy, patch); err != nil {
		s.apiRefusal(w, "The API server refused to "+action+" Sync "+key.String(), err, syncPath(key))
		return
	}
	// Done: an Event on the Sync says who asked. A user who may not create
	// Events still has the action done; the log says why none was recorded.
	if err := s.client.Create(r.Context(), plan.ActionEvent(sy, action, s.opts.User, "tether ui", s.now())); err != nil {
		s.opts.Log.Info("the action was done but not recorded as an Event", "sync", key.String(), "action", action, "error", err.Error())
	}
	http.Redirect(w, r, syncPath(key)+"?done="+action, http.StatusSeeOther)
}

// syncPath is the path of a Sync's page.
func syncPath(key client.ObjectKey) string {
	return "/syncs/" + url.PathEscape(key.Namespace) + "/" + url.PathEscape(key.Name)
}
