package ui

import (
	"bytes"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/source"
)

// maxManifest bounds the live manifest the panel shows.
const maxManifest = 256 << 10

// objectView is what the object panel shows: one object of a Sync, in one of
// its views: live, desired (what git declares) or the diff of the two.
type objectView struct {
	Sync row
	Ref  v1alpha1.ObjectRef
	View string // "live", "desired" or "diff"
	// Views are the links to each view, for an object of the inventory (the
	// objects its workloads own are not in git: they have the live view alone).
	Views            []viewTab
	Manifest         string // live view: YAML, a Secret's values masked
	ManagedFields    bool   // shown (?managedFields=show)
	ManagedFieldsURL string // the page with them shown or hidden, the other way
	Desired          string // desired view: the rendered object as YAML, a Secret's values masked
	Diff             *objectDiffView
	Note             string // why the desired or diff view shows nothing
	DiffURL          string // the diff page of the object, for an object of the inventory
	GitURL           string // the Sync's path in git at the applied commit, where the host is known
	LogsURL          string // its containers' logs, for a Pod
	Events           []eventView
	EventGaps        []string
}

// viewTab is a link to one view of the panel.
type viewTab struct {
	Name, Label, URL string
	Current          bool
}

// The panel's views (?view=) and what their links say.
var objectViews = []struct{ name, label string }{{"live", "Live"}, {"desired", "Desired (git)"}, {"diff", "Diff"}}

// objectPage shows one object of a Sync as the user reads it. Its live view
// (the default) is its live manifest (managedFields hidden unless asked; a
// Secret's values replaced by plan.SecretMask on the server, so that no value
// reaches the browser). For an object of the inventory, ?view=desired shows
// what git declares now for it, rendered as the diff page renders (masked
// alike), and ?view=diff its diff with the live object, dry-run as the user;
// each costs a render, so only these views render. Every view has the object's
// Events and a link to the Sync's directory in git at the applied commit. The
// object is named by its key (group/kind/namespace/name) and must be in the
// Sync's inventory, or be a ReplicaSet, Job, Pod or EndpointSlice of a
// namespace of it (what its workloads and Services own).
func (s *Server) objectPage(w http.ResponseWriter, r *http.Request) {
	sy, key, found := s.syncOf(w, r)
	if !found {
		return
	}
	q := r.URL.Query()
	ref, ok := objectOf(sy, q.Get("key"))
	if !ok {
		s.render(w, http.StatusNotFound, "message", messagePage{Title: "Refused", Message: "Sync " + key.String() + " lists no such object, and owns none by that name.", Back: syncPath(key)})
		return
	}
	v := objectView{Sync: rowOf(sy), Ref: ref, View: "live", ManagedFields: q.Get("managedFields") == "show"}
	if slices.ContainsFunc(plan.Inventory(sy.Status), func(o v1alpha1.ObjectRef) bool { return o.Key() == ref.Key() }) {
		v.View = viewNamed(q.Get("view"))
		v.Views = viewTabs(key, ref, v.View)
		v.DiffURL = diffPath(key, ref.Key())
		v.GitURL = gitWebURL(sy.Spec.Source.URL, plan.CommitOf(sy.Status.LastAppliedRevision), sy.Spec.Source.Path)
	}
	if isPod(ref) {
		v.LogsURL = logsPath(key, ref, "")
	}
	code := http.StatusOK
	if v.View == "live" {
		if !s.readLive(w, r, key, ref, &v) {
			return
		}
	} else if code, ok = s.readGit(r, sy, ref, &v); !ok {
		return
	}
	v.Events, v.EventGaps = s.objectEvents(r, ref)
	s.render(w, code, "object", v)
}

// viewNamed is the view ?view= names, the live one for any other name.
func viewNamed(name string) string {
	for _, ov := range objectViews {
		if ov.name == name {
			return name
		}
	}
	return "live"
}

// viewTabs are the links to each view of the panel of ref, current the one shown.
func viewTabs(key client.ObjectKey, ref v1alpha1.ObjectRef, current string) []viewTab {
	out := make([]viewTab, 0, len(objectViews))
	for _, ov := range objectViews {
		u := objectPath(key, ref)
		if ov.name != "live" {
			u += "&view=" + ov.name
		}
		out = append(out, viewTab{Name: ov.name, Label: ov.label, URL: u, Current: ov.name == current})
	}
	return out
}

// readLive fills the live view of v: the object read as the user. It answers
// the request itself, and returns false, when the object cannot be read.
func (s *Server) readLive(w http.ResponseWriter, r *http.Request, key client.ObjectKey, ref v1alpha1.ObjectRef, v *objectView) bool {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind})
	if err := viewerOf(r).client.Get(r.Context(), client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, live); err != nil {
		s.apiRefusal(w, r, "Reading "+ref.Kind+" "+ref.Namespace+"/"+ref.Name, err, syncPath(key))
		return false
	}
	manifest, err := manifestOf(live, v.ManagedFields)
	if err != nil {
		s.refuse(w, r, http.StatusBadGateway, "Writing "+ref.Kind+" "+ref.Name+" as YAML: "+err.Error())
		return false
	}
	v.Manifest = manifest
	v.ManagedFieldsURL = objectPath(key, ref) + "&managedFields=" + map[bool]string{true: "hide", false: "show"}[v.ManagedFields]
	return true
}

// readGit fills the desired or the diff view of v from a render of sy's source
// as the user (Options.Render, within one of the diff page's slots and its
// timeout): the rendered object, or compare's diff of it (the diff page's).
// What fails is said in v.Note, with the page's status; ok is false when the
// request ended while it waited for a slot.
func (s *Server) readGit(r *http.Request, sy *v1alpha1.Sync, ref v1alpha1.ObjectRef, v *objectView) (code int, ok bool) {
	if s.opts.Render == nil {
		v.Note = "This server cannot render a Sync's source, so it shows neither what git declares nor the diff."
		return http.StatusNotImplemented, true
	}
	ctx, done, ok := s.renderSlot(r)
	if !ok {
		return 0, false
	}
	defer done()
	user := viewerOf(r)
	objs, err := s.opts.Render(ctx, user.client, user.cfg, sy)
	if err != nil {
		v.Note = "Rendering the source of Sync " + sy.Namespace + "/" + sy.Name + ": " + oneLine(err.Error())
		return http.StatusBadGateway, true
	}
	if v.View == "diff" {
		d := compare(ctx, user.client, sy, objs, []v1alpha1.ObjectRef{ref})[0]
		v.Diff = &d
		return http.StatusOK, true
	}
	for _, o := range objs {
		if !rendersAny(o, []v1alpha1.ObjectRef{ref}, sy.Spec.Destination.Namespace) {
			continue
		}
		if v.Desired, err = manifestOf(o, false); err != nil {
			v.Note = "Writing " + ref.Kind + " " + ref.Name + " as YAML: " + oneLine(err.Error())
			return http.StatusBadGateway, true
		}
		return http.StatusOK, true
	}
	v.Note = "Git does not declare it any more: a sync would prune it, unless it is protected or prune is off."
	return http.StatusOK, true
}

// objectOf is the object of sy whose key is key: one of its inventory, or a
// ReplicaSet, Job, Pod or EndpointSlice (at the version ownedKinds names) in a
// namespace of its inventory that holds a workload or a Service.
func objectOf(sy *v1alpha1.Sync, key string) (v1alpha1.ObjectRef, bool) {
	inventory := plan.Inventory(sy.Status)
	for _, o := range inventory {
		if o.Key() == key {
			return o, true
		}
	}
	parts := strings.Split(key, "/")
	if len(parts) != 4 || parts[3] == "" {
		return v1alpha1.ObjectRef{}, false
	}
	for _, gvk := range ownedKinds {
		ref := v1alpha1.ObjectRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: parts[2], Name: parts[3]}
		if ref.Key() == key && slices.Contains(ownerNamespaces(inventory), ref.Namespace) {
			return ref, true
		}
	}
	return v1alpha1.ObjectRef{}, false
}

// manifestOf is obj as YAML: managedFields left out unless withManagedFields,
// a Secret's values (and kubectl's copy of the whole object in an annotation)
// replaced by plan.SecretMask, bounded to maxManifest.
func manifestOf(obj *unstructured.Unstructured, withManagedFields bool) (string, error) {
	obj = obj.DeepCopy()
	if !withManagedFields {
		obj.SetManagedFields(nil)
	}
	if obj.GroupVersionKind().Group == "" && obj.GetKind() == "Secret" {
		// Compared with itself, every value is "unchanged": each becomes the
		// mask, and no value is left.
		plan.MaskSecret(obj, obj.DeepCopy())
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(obj.Object); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	out := buf.Bytes()
	if len(out) > maxManifest {
		out = append(out[:maxManifest:maxManifest], []byte("\n# … cut at 256 KiB\n")...)
	}
	return string(bytes.TrimRight(out, "\n")), nil
}

// objectEvents lists, as the user, the Events of one object, newest first.
func (s *Server) objectEvents(r *http.Request, ref v1alpha1.ObjectRef) ([]eventView, []string) {
	list := &corev1.EventList{}
	if err := viewerOf(r).client.List(r.Context(), list, client.InNamespace(ref.Namespace)); err != nil {
		return nil, []string{"Events in " + ref.Namespace + ": " + err.Error()}
	}
	var events []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == ref.Kind && e.InvolvedObject.Name == ref.Name {
			events = append(events, e)
		}
	}
	slices.SortStableFunc(events, func(a, b corev1.Event) int { return plan.EventTime(&b).Compare(plan.EventTime(&a)) })
	events = events[:min(len(events), maxEvents)]
	out := make([]eventView, 0, len(events))
	for i := range events {
		e := &events[i]
		out = append(out, eventView{
			Time: plan.EventTime(e).UTC().Format(time.DateTime) + " UTC", Type: e.Type, Reason: e.Reason,
			Object: ref.Kind + "/" + ref.Namespace + "/" + ref.Name, Message: source.OneLine(e.Message, maxMessage),
		})
	}
	return out, nil
}

// objectPath is the panel of object ref of the Sync key.
func objectPath(key client.ObjectKey, ref v1alpha1.ObjectRef) string {
	return syncPath(key) + "/object?key=" + url.QueryEscape(ref.Key())
}
