package ui

import (
	"net/http"
	"net/url"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
)

// logsView is what the logs page shows: one container of a Pod of a Sync, its
// log streamed (logs_stream.go) into the page by the script.
type logsView struct {
	Sync       row
	Pod        v1alpha1.ObjectRef
	PanelURL   string // the Pod's panel
	Container  string
	Containers []containerLink
	StreamURL  string
	// TailLines, MaxLines and MaxBytes are the bounds the page states.
	TailLines, MaxLines int
	MaxBytes            string
}

// containerLink is one container of the Pod in the page's picker.
type containerLink struct {
	Name, Kind, URL string // Kind: "", "init" or "ephemeral"
	Current         bool
}

// logsPage shows the log of one container of a Pod the Sync's panel may open
// (objectOf: a Pod of its inventory, or of a namespace of it that holds a
// workload), with a link to each of its containers; the script streams the log
// into it. The Pod is read as the user, for its containers.
func (s *Server) logsPage(w http.ResponseWriter, r *http.Request) {
	syncObj, pod, ok := s.podOfSync(w, r)
	if !ok {
		return
	}
	key := client.ObjectKeyFromObject(syncObj)
	live, err := readPod(r, pod)
	if err != nil {
		s.apiRefusal(w, r, "Reading Pod "+pod.Namespace+"/"+pod.Name, err, objectPath(key, pod))
		return
	}
	names := containersOf(live)
	container := r.URL.Query().Get("container")
	if container == "" && len(names) > 0 {
		container = defaultContainer(live, names)
	}
	if !slices.ContainsFunc(names, func(c containerLink) bool { return c.Name == container }) {
		s.render(w, http.StatusNotFound, "message", messagePage{Title: "Refused", Message: "Pod " + pod.Namespace + "/" + pod.Name + " has no container " + container + ".", Back: objectPath(key, pod)})
		return
	}
	for i := range names {
		names[i].URL = logsPath(key, pod, names[i].Name)
		names[i].Current = names[i].Name == container
	}
	s.render(w, http.StatusOK, "logs", logsView{
		Sync: rowOf(syncObj), Pod: pod, PanelURL: objectPath(key, pod), Container: container, Containers: names,
		StreamURL: logsStreamPath(key, pod, container),
		TailLines: logTailLines, MaxLines: logMaxLinesShown, MaxBytes: "4 MiB",
	})
}

// podOfSync reads, as the user, the Sync the request's path names and the Pod
// of it ?key= names; it answers the request itself (a refusal) when either
// is not there or the key names no Pod of the Sync.
func (s *Server) podOfSync(w http.ResponseWriter, r *http.Request) (*v1alpha1.Sync, v1alpha1.ObjectRef, bool) {
	syncObj, key, found := s.syncOf(w, r)
	if !found {
		return nil, v1alpha1.ObjectRef{}, false
	}
	ref, ok := objectOf(syncObj, r.URL.Query().Get("key"))
	if !ok || !isPod(ref) {
		s.render(w, http.StatusNotFound, "message", messagePage{Title: "Refused", Message: "Sync " + key.String() + " lists no such Pod, and owns none by that name.", Back: syncPath(key)})
		return nil, v1alpha1.ObjectRef{}, false
	}
	return syncObj, ref, true
}

// isPod tells whether ref is a Pod, whose panel links to its logs.
func isPod(ref v1alpha1.ObjectRef) bool { return ref.Group == "" && ref.Kind == "Pod" }

// readPod reads the Pod as the user, by a list of its namespace's Pods of
// that name: the rights the Sync's tree needs already (tether-ui-viewer lists
// Pods, and gets none).
func readPod(r *http.Request, pod v1alpha1.ObjectRef) (*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := viewerOf(r).client.List(r.Context(), list, client.InNamespace(pod.Namespace), client.MatchingFields{"metadata.name": pod.Name}); err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, apierrors.NewNotFound(corev1.Resource("pods"), pod.Name)
	}
	return &list.Items[0], nil
}

// containersOf are the Pod's containers as kubectl logs names them: init
// containers first, then its containers, then ephemeral ones.
func containersOf(pod *corev1.Pod) []containerLink {
	var out []containerLink
	for _, c := range pod.Spec.InitContainers {
		out = append(out, containerLink{Name: c.Name, Kind: "init"})
	}
	for _, c := range pod.Spec.Containers {
		out = append(out, containerLink{Name: c.Name})
	}
	for _, c := range pod.Spec.EphemeralContainers {
		out = append(out, containerLink{Name: c.Name, Kind: "ephemeral"})
	}
	return out
}

// defaultContainer is the container kubectl logs shows when none is named:
// the one the kubectl.kubernetes.io/default-container annotation names, else
// the first (not init) container.
func defaultContainer(pod *corev1.Pod, names []containerLink) string {
	if want := pod.Annotations["kubectl.kubernetes.io/default-container"]; want != "" &&
		slices.ContainsFunc(names, func(c containerLink) bool { return c.Name == want }) {
		return want
	}
	if len(pod.Spec.Containers) > 0 {
		return pod.Spec.Containers[0].Name
	}
	return names[0].Name
}

// logsStreamPath is the stream of the log of container of pod, of the Sync key.
func logsStreamPath(key client.ObjectKey, pod v1alpha1.ObjectRef, container string) string {
	return syncPath(key) + "/logs/stream?key=" + url.QueryEscape(pod.Key()) + "&container=" + url.QueryEscape(container)
}

// logsPath is the logs page of container of pod, of the Sync key; of its
// default container when container is "".
func logsPath(key client.ObjectKey, pod v1alpha1.ObjectRef, container string) string {
	p := syncPath(key) + "/logs?key=" + url.QueryEscape(pod.Key())
	if container != "" {
		p += "&container=" + url.QueryEscape(container)
	}
	return p
}
