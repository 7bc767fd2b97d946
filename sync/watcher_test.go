package sync

import (
	"context"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
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

// The cache keeps, of a managed object, a digest of its labels and annotations in
// place of them (CacheTransform): a change of a label alone, which moves no
// generation, is still a change the Watcher reports, and a status write is not.
func TestWatcherSeesALabelChangeThroughTheTrimmedCache(t *testing.T) {
	cfg := controlplane.Shared(t).Config()
	ns := controlplane.NewNamespace(t, cfg)
	scheme := runtime.NewScheme()
	harness.Must(t, clientgoscheme.AddToScheme(scheme))
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultTransform: CacheTransform})
	harness.Must(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	go func() { _ = c.Start(ctx) }()
	writer, err := client.New(cfg, client.Options{Scheme: scheme})
	harness.Must(t, err)

	// Only the status of unsettled objects is followed: a Deployment's own
	// status writes are not, once it is Healthy.
	w := NewWatcher(c, WatcherOptions{OnlyUnsettledStatus: true})
	deployments := appsv1.SchemeGroupVersion.WithKind("Deployment")
	sync := types.NamespacedName{Namespace: ns, Name: "app"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: map[string]string{"tier": "front"},
			Annotations: map[string]string{v1alpha1.OwnedByAnnotation: ns + "/app"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
	// The marker is a Deployment of another Sync: a label edit of it queues that Sync.
	marker := types.NamespacedName{Namespace: ns, Name: "marker"}
	mk := d.DeepCopy()
	mk.Name, mk.Annotations = "marker", map[string]string{v1alpha1.OwnedByAnnotation: ns + "/marker"}
	harness.Must(t, writer.Create(ctx, d))
	harness.Must(t, writer.Create(ctx, mk))
	for _, s := range []types.NamespacedName{sync, marker} {
		w.Prepare(ctx, s, []schema.GroupVersionKind{deployments}, time.Minute)
		harness.Must(t, w.Track(ctx, s, []schema.GroupVersionKind{deployments}))
	}
	cached := func(ctx context.Context) (*metav1.PartialObjectMetadata, error) {
		m := metadataOf(deployments)
		return m, c.Get(ctx, client.ObjectKeyFromObject(d), m)
	}
	// queued reports whether the Watcher queued sync for what was written before
	// the call: it edits a label of the marker and reads what the Watcher queued up
	// to the marker's Sync. One informer's events are handled in order, so
	// whatever an earlier write of d queued comes before it.
	edits := 0
	queued := func(t *testing.T) bool {
		t.Helper()
		edits++
		mk.Labels["edit"] = strconv.Itoa(edits)
		harness.Must(t, writer.Update(t.Context(), mk))
		found := false
		timeout := time.After(time.Minute)
		for {
			select {
			case e := <-w.events:
				switch client.ObjectKeyFromObject(e.Object) {
				case marker:
					return found
				case sync:
					found = true
				}
			case <-timeout:
				t.Fatal("a label edit of the marker queued nothing in a minute")
			}
		}
	}
	queued(t) // what the creation of d queued, if anything

	t.Run("the cache keeps no label", func(t *testing.T) {
		m, err := cached(t.Context())
		harness.Must(t, err)
		if len(m.Labels) != 0 || m.Annotations[MetadataDigestKey] == "" {
			t.Errorf("cached labels %v, annotations %v: want none, and the digest", m.Labels, m.Annotations)
		}
	})
	t.Run("a status write queues nothing", func(t *testing.T) {
		d.Status.ObservedGeneration = d.Generation
		harness.Must(t, writer.Status().Update(t.Context(), d))
		if queued(t) {
			t.Error("a status write of a Healthy Deployment queued its Sync")
		}
	})
	t.Run("a label edit queues the Sync", func(t *testing.T) {
		d.Labels["tier"] = "back"
		harness.Must(t, writer.Update(t.Context(), d))
		if !queued(t) {
			t.Error("a label edit did not queue the Sync")
		}
	})
}

// syncingInformer reports synced from its n-th look on (never when n is 0).
type syncingInformer struct {
	cache.Informer
	n, looks int
}

func (i *syncingInformer) HasSynced() bool {
	i.looks++
	return i.n > 0 && i.looks >= i.n
}

func TestWaitSyncedLooksUntilEveryInformerHasSynced(t *testing.T) {
	t.Run("it returns once the slowest has synced, having looked again", func(t *testing.T) {
		fast, slow := &syncingInformer{n: 1}, &syncingInformer{n: 4}
		waitSynced(t.Context(), []cache.Informer{fast, slow}, time.Minute)
		if slow.looks != 4 {
			t.Errorf("the slow informer was looked at %d times, want 4 (synced at the 4th)", slow.looks)
		}
	})
	t.Run("it gives up at the timeout", func(t *testing.T) {
		never := &syncingInformer{}
		waitSynced(t.Context(), []cache.Informer{never}, 30*time.Millisecond) // returns: that is the test
		if never.looks < 1 {
			t.Errorf("looked %d times, want at least once", never.looks)
		}
	})
	t.Run("it gives up when the context is done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		never := &syncingInformer{}
		waitSynced(ctx, []cache.Informer{never}, time.Hour)
		if never.looks != 1 {
			t.Errorf("looked %d times, want once", never.looks)
		}
	})
}
