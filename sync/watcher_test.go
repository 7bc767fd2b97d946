package sync

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"tether.dev/tether/api/v1alpha1"
)

func TestWatcherTriggersOnlySyncsOfTheNamespacesItServes(t *testing.T) {
	owned := func(owner string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: "team-a", Name: "web", Annotations: map[string]string{v1alpha1.OwnedByAnnotation: owner},
		}}
	}
	for _, tc := range []struct {
		name       string
		namespaces []string
		owner      string
		want       string
	}{
		{"every namespace", nil, "elsewhere/app", "elsewhere/app"},
		{"a served namespace", []string{"team-a", "team-b"}, "team-b/app", "team-b/app"},
		{"a namespace not served", []string{"team-a", "team-b"}, "elsewhere/app", ""},
		{"no owner", []string{"team-a"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWatcher(nil, WatcherOptions{Namespaces: tc.namespaces})
			w.onDelete(owned(tc.owner))
			got := ""
			select {
			case e := <-w.events:
				got = e.Object.GetNamespace() + "/" + e.Object.GetName()
			default:
			}
			if got != tc.want {
				t.Errorf("triggered %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWatcherFollowsTheStatusThatMayTellHealth(t *testing.T) {
	deployments := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	autoscalers := schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}
	sync := types.NamespacedName{Namespace: "team-a", Name: "app"}
	web := v1alpha1.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team-a", Name: "web"}
	webHPA := v1alpha1.ObjectRef{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler", Namespace: "team-a", Name: "web"}
	object := func(name, rv string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: "team-a", Name: name, Generation: 2, ResourceVersion: rv,
			Annotations: map[string]string{v1alpha1.OwnedByAnnotation: "team-a/app"},
		}}
	}
	triggered := func(w *Watcher) bool {
		select {
		case <-w.events:
			return true
		default:
			return false
		}
	}
	for _, tc := range []struct {
		name    string
		opts    WatcherOptions
		kind    schema.GroupVersionKind
		follow  []v1alpha1.ObjectRef
		changed string
		want    bool
	}{
		{"a status change of an object not yet Healthy", WatcherOptions{}, autoscalers, []v1alpha1.ObjectRef{webHPA}, "web", true},
		{"a status change of a Healthy object of a kind with heartbeats", WatcherOptions{}, autoscalers, []v1alpha1.ObjectRef{webHPA}, "api", false},
		{"a status change once every object is Healthy", WatcherOptions{}, autoscalers, nil, "web", false},
		{"a status change of a Healthy workload", WatcherOptions{}, deployments, nil, "web", true},
		{"a status change of a Healthy workload with OnlyUnsettledStatus", WatcherOptions{OnlyUnsettledStatus: true}, deployments, nil, "web", false},
		{"a status change of an unsettled workload with OnlyUnsettledStatus", WatcherOptions{OnlyUnsettledStatus: true}, deployments, []v1alpha1.ObjectRef{web}, "web", true},
		{"a status change with IgnoreStatus", WatcherOptions{IgnoreStatus: true}, deployments, []v1alpha1.ObjectRef{web}, "web", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWatcher(nil, tc.opts)
			w.FollowStatus(sync, []v1alpha1.ObjectRef{web, webHPA})
			w.FollowStatus(sync, tc.follow) // replaces what the Sync followed before
			w.onUpdate(tc.kind, object(tc.changed, "1"), object(tc.changed, "2"))
			if got := triggered(w); got != tc.want {
				t.Errorf("triggered = %t, want %t", got, tc.want)
			}
		})
	}
	t.Run("a change of spec triggers whatever the health", func(t *testing.T) {
		w := NewWatcher(nil)
		newer := object("api", "2")
		newer.Generation = 3
		w.onUpdate(deployments, object("api", "1"), newer)
		if !triggered(w) {
			t.Error("a spec change of a Healthy object triggered nothing")
		}
	})
	t.Run("forgetting a Sync stops following its objects", func(t *testing.T) {
		w := NewWatcher(nil)
		w.FollowStatus(sync, []v1alpha1.ObjectRef{webHPA})
		w.Forget(t.Context(), sync)
		w.onUpdate(autoscalers, object("web", "1"), object("web", "2"))
		if triggered(w) {
			t.Error("a status change of a forgotten Sync's object triggered a reconcile")
		}
	})
}
