package plan_test

import (
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply/contract"
	"tether.dev/tether/plan"
)

func TestForApplyMapsASyncToTheOptionsOfItsApply(t *testing.T) {
	s := &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tether-system", Name: "web"},
		Spec: v1alpha1.SyncSpec{
			Destination:              v1alpha1.DestinationSpec{Namespace: "web"},
			IgnoreDifferences:        []v1alpha1.IgnoreRule{{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}},
			IgnoreAutoscaledReplicas: ptr.To(false),
		},
	}
	base := contract.DefaultOptions()
	base.Ignore = []v1alpha1.IgnoreRule{{Kind: "*", Managers: []string{"agent-wide"}}}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind("ConfigMap")
	obj.SetName("cfg")
	givenUp := []v1alpha1.GivenUpField{{ObjectRef: v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "cfg"}, JSONPointer: "/data/a", Manager: "fighter"}}

	opts := plan.ForApply(s, []*unstructured.Unstructured{obj}, base, givenUp)

	if opts.DefaultNamespace != "web" {
		t.Errorf("DefaultNamespace = %q, want the destination's web", opts.DefaultNamespace)
	}
	if diff := cmp.Diff(append(base.Ignore, s.Spec.IgnoreDifferences...), opts.Ignore); diff != "" {
		t.Errorf("Ignore: the agent's rules then the Sync's (-want +got):\n%s", diff)
	}
	if opts.IgnoreScaledReplicas {
		t.Error("IgnoreScaledReplicas is on though the Sync turned ignoreAutoscaledReplicas off")
	}
	want := map[v1alpha1.ObjectRef][]string{{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "cfg"}: {"/data/a"}}
	if diff := cmp.Diff(want, opts.IgnoreFields); diff != "" {
		t.Errorf("IgnoreFields from the given-up fields (-want +got):\n%s", diff)
	}
	if got := obj.GetAnnotations()[v1alpha1.OwnedByAnnotation]; got != "tether-system/web" {
		t.Errorf("owned-by = %q, want tether-system/web", got)
	}
	if got := obj.GetLabels()[v1alpha1.SyncLabel]; got != "tether-system.web" {
		t.Errorf("label %s = %q, want tether-system.web", v1alpha1.SyncLabel, got)
	}
	if len(base.Ignore) != 1 {
		t.Errorf("the base options' rules were changed: %v", base.Ignore)
	}
}

// The marks of a revision's objects are two strings made once per Sync: a
// revision of thousands of objects, held while it is applied, does not hold a
// copy of each per object.
func TestTheObjectsOfARevisionShareTheirMarks(t *testing.T) {
	s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: "tether-system", Name: "web"}}
	objs := []*unstructured.Unstructured{{Object: map[string]any{}}, {Object: map[string]any{}}}
	plan.MarkOwned(objs, s)
	first, second := objs[0], objs[1]
	for _, v := range []struct{ what, a, b string }{
		{"owned-by annotation", first.GetAnnotations()[v1alpha1.OwnedByAnnotation], second.GetAnnotations()[v1alpha1.OwnedByAnnotation]},
		{"sync label", first.GetLabels()[v1alpha1.SyncLabel], second.GetLabels()[v1alpha1.SyncLabel]},
	} {
		if v.a != v.b || v.a == "" {
			t.Fatalf("%s: %q and %q; want the Sync's, the same on both", v.what, v.a, v.b)
		}
		if unsafe.StringData(v.a) != unsafe.StringData(v.b) {
			t.Errorf("%s: each object holds a copy of its own", v.what)
		}
	}
}

// Marking an object gives it labels and annotations maps of its own: objects of
// one render share the maps below their metadata, so a map another object (or the
// render cache) holds is left as it was. A label set by git stays, the Sync's
// label is added.
func TestMarkingLeavesSharedMapsAlone(t *testing.T) {
	s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: "tether-system", Name: "web"}}
	shared := map[string]any{"app": "web"}
	objs := []*unstructured.Unstructured{
		{Object: map[string]any{"metadata": map[string]any{"labels": shared, "annotations": shared}}},
		{Object: map[string]any{"metadata": map[string]any{"labels": shared}}},
	}
	plan.MarkOwned(objs[:1], s)
	if diff := cmp.Diff(map[string]any{"app": "web"}, shared); diff != "" {
		t.Errorf("the shared map was changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"app": "web", v1alpha1.SyncLabel: "tether-system.web"}, objs[0].GetLabels()); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"app": "web", v1alpha1.OwnedByAnnotation: "tether-system/web"}, objs[0].GetAnnotations()); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"app": "web"}, objs[1].GetLabels()); diff != "" {
		t.Errorf("the other object's labels (-want +got):\n%s", diff)
	}
}

func TestLeftGitAndPruneHeld(t *testing.T) {
	cm := func(name, version string) v1alpha1.ObjectRef {
		return v1alpha1.ObjectRef{Group: "apps", Version: version, Kind: "Deployment", Namespace: "web", Name: name}
	}
	inventory := []v1alpha1.ObjectRef{cm("a", "v1"), cm("b", "v1"), cm("c", "v1beta1")}
	cs := &contract.ChangeSet{Changes: []contract.Change{{Object: cm("a", "v1")}, {Object: cm("c", "v1")}}}
	stale := plan.LeftGit(inventory, cs)
	if diff := cmp.Diff([]v1alpha1.ObjectRef{cm("b", "v1")}, stale); diff != "" {
		t.Errorf("left git (an object under another version has not) (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		name  string
		spec  v1alpha1.SyncSpec
		stale int
		empty bool
		want  string
	}{
		{"within the default limit", v1alpha1.SyncSpec{}, 1, false, ""},
		{"prune off", v1alpha1.SyncSpec{Prune: ptr.To(false)}, 1, false, "prune is off"},
		{"an empty render", v1alpha1.SyncSpec{}, 3, true, "the path renders no objects and spec.allowEmpty is false"},
		{"over the default limit", v1alpha1.SyncSpec{}, 2, false, "2 of 3 objects left git, more than the prune limit of 50% (1); nothing was pruned. " +
			"If this is intended, set spec.pruneLimit (for example \"100%\") and it will proceed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &v1alpha1.Sync{Spec: tc.spec}
			if got := plan.PruneHeld(s, inventory[:tc.stale], len(inventory), tc.empty); got != tc.want {
				t.Errorf("PruneHeld = %q, want %q", got, tc.want)
			}
		})
	}
}
