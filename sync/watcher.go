package sync

import (
	"context"
	"fmt"
	"math"
	"strings"
	gosync "sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
)

// Watcher watches every kind that some Sync manages, one shared metadata-only
// informer per kind, and turns a change of a managed object into a reconcile of the
// Sync that owns it (per its tether.dev/owned-by annotation). Informers start when a
// Sync first applies a kind and stop when no Sync applies it any more.
//
// The same informers answer apply's question "has this object changed since it was
// verified?" without a request to the API server (see apply.LiveVersions).
//
// A change of status alone cannot be drift, and is dropped, except for the objects
// a Sync last judged not Healthy (FollowStatus), and for the objects of the kinds
// whose status moves only when their health may (followedKinds): their status
// changes re-assess the Sync at once, so that its health follows a rollout as it
// happens, and a Healthy workload turning Degraded is told at once, instead of at a
// timer. Nothing is written to the objects for that, and nothing is held: the
// informers already see every change.
type Watcher struct {
	cache  cache.Cache
	events chan event.GenericEvent
	// serves, when not nil, are the namespaces whose Syncs this agent reconciles.
	serves map[string]bool

	mu    gosync.Mutex
	kinds map[schema.GroupVersionKind]*watchedKind
	syncs map[types.NamespacedName][]schema.GroupVersionKind

	// unsettledMu guards unsettled, apart from mu: the informers' handlers read it
	// while Track may hold mu to start or stop an informer.
	unsettledMu gosync.Mutex
	// unsettled holds the objects whose status changes re-assess their Sync, and
	// bySync the same objects by Sync, so that FollowStatus replaces a Sync's set.
	unsettled map[v1alpha1.ObjectRef]bool
	bySync    map[types.NamespacedName][]v1alpha1.ObjectRef
	// ignoreStatus drops every status-only change, as before health followed the
	// cluster (WatcherOptions.IgnoreStatus).
	ignoreStatus bool
	// onlyUnsettled follows the status of unsettled objects only
	// (WatcherOptions.OnlyUnsettledStatus).
	onlyUnsettled bool
}

type watchedKind struct {
	informer     cache.Informer
	registration toolscache.ResourceEventHandlerRegistration
	users        map[types.NamespacedName]bool
}

var _ apply.LiveVersions = (*Watcher)(nil)

// WatcherOptions configure a Watcher.
type WatcherOptions struct {
	// Namespaces, when set, are the only namespaces whose Syncs the agent reconciles
	// (--watch-namespaces): a change of an object whose owned-by annotation names a
	// Sync elsewhere (written by hand, say) triggers nothing, instead of a reconcile
	// of a Sync the agent's cache cannot hold.
	Namespaces []string
	// IgnoreStatus drops the status changes of objects that are not yet Healthy too,
	// leaving their Sync's health to be re-assessed by its progressing requeue
	// (every ten seconds) instead of at once. It trades how soon health is known for
	// fewer reconciles; benchmarks measure the difference.
	IgnoreStatus bool
	// OnlyUnsettledStatus follows the status changes of the objects that are not
	// yet Healthy only, not those of Healthy objects of the kinds whose status
	// tells their health (followedKinds): a Healthy workload turning Degraded is
	// then told at the Sync's interval. Tests and benchmarks compare the two.
	OnlyUnsettledStatus bool
}

// NewWatcher returns a Watcher whose informers live in c (the manager's cache).
func NewWatcher(c cache.Cache, opts ...WatcherOptions) *Watcher {
	w := &Watcher{
		cache:  c,
		events: make(chan event.GenericEvent, 1024),
		kinds:  map[schema.GroupVersionKind]*watchedKind{},
		syncs:  map[types.NamespacedName][]schema.GroupVersionKind{},

		unsettled: map[v1alpha1.ObjectRef]bool{},
		bySync:    map[types.NamespacedName][]v1alpha1.ObjectRef{},
	}
	for _, o := range opts {
		w.ignoreStatus = w.ignoreStatus || o.IgnoreStatus
		w.onlyUnsettled = w.onlyUnsettled || o.OnlyUnsettledStatus
		for _, ns := range o.Namespaces {
			if w.serves == nil {
				w.serves = map[string]bool{}
			}
			w.serves[ns] = true
		}
	}
	return w
}

// ForCache returns a Watcher like w (its options, the Syncs it serves) whose
// informers live in c, another cluster's cache, and whose changes queue the Syncs
// through w's Source: a remote cluster's drift reaches the same reconciler.
func (w *Watcher) ForCache(c cache.Cache) *Watcher {
	return &Watcher{
		cache:  c,
		events: w.events,
		serves: w.serves,
		kinds:  map[schema.GroupVersionKind]*watchedKind{},
		syncs:  map[types.NamespacedName][]schema.GroupVersionKind{},

		unsettled:     map[v1alpha1.ObjectRef]bool{},
		bySync:        map[types.NamespacedName][]v1alpha1.ObjectRef{},
		ignoreStatus:  w.ignoreStatus,
		onlyUnsettled: w.onlyUnsettled,
	}
}

// Source feeds the reconciler the Syncs whose objects changed.
func (w *Watcher) Source() source.Source {
	return source.Channel(w.events, &handler.EnqueueRequestForObject{})
}

// Track records the kinds sync manages now, starting informers for new kinds and
// stopping those no Sync uses any more.
func (w *Watcher) Track(ctx context.Context, sync types.NamespacedName, kinds []schema.GroupVersionKind) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	wanted := map[schema.GroupVersionKind]bool{}
	for _, gvk := range kinds {
		wanted[gvk] = true
		if err := w.use(ctx, gvk, sync); err != nil {
			return err
		}
	}
	for _, gvk := range w.syncs[sync] {
		if !wanted[gvk] {
			w.release(ctx, gvk, sync)
		}
	}
	w.syncs[sync] = kinds
	return nil
}

// Forget stops watching on behalf of a Sync that is gone.
func (w *Watcher) Forget(ctx context.Context, sync types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, gvk := range w.syncs[sync] {
		w.release(ctx, gvk, sync)
	}
	delete(w.syncs, sync)
	w.FollowStatus(sync, nil)
}

// FollowStatus makes the status changes of refs, the objects sync last judged not
// Healthy, trigger a reconcile of sync, in place of those FollowStatus was last
// given for it. An object's status changes are dropped again once its Sync judges
// it Healthy.
func (w *Watcher) FollowStatus(sync types.NamespacedName, refs []v1alpha1.ObjectRef) {
	w.unsettledMu.Lock()
	defer w.unsettledMu.Unlock()
	for _, ref := range w.bySync[sync] {
		delete(w.unsettled, ref)
	}
	if len(refs) == 0 {
		delete(w.bySync, sync)
		return
	}
	for _, ref := range refs {
		w.unsettled[ref] = true
	}
	w.bySync[sync] = refs
}

// followedKinds are the kinds whose status changes re-assess their Sync even when
// it judged them Healthy: their controllers write status when their health may
// have changed (a workload's replicas going unavailable, a CronJob's run ending, a
// claim losing its volume, an API's backend going away, a load balancer losing its
// address), not on a heartbeat. The status of other kinds is followed only while
// not Healthy: an autoscaler rewrites its current metrics every 15 s, and custom
// resources may carry heartbeat timestamps, each of which would cost a reconcile;
// a CustomResourceDefinition's names are judged when it is created, and its status
// writes after that (stored versions) tell nothing of its health.
var followedKinds = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}:                   true,
	{Group: "apps", Kind: "StatefulSet"}:                  true,
	{Group: "apps", Kind: "DaemonSet"}:                    true,
	{Group: "batch", Kind: "Job"}:                         true,
	{Group: "batch", Kind: "CronJob"}:                     true,
	{Kind: "Pod"}:                                         true,
	{Kind: "PersistentVolumeClaim"}:                       true,
	{Kind: "Service"}:                                     true,
	{Group: "networking.k8s.io", Kind: "Ingress"}:         true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}: true,
}

// followsStatus reports whether a status change of the object gvk/namespace/name
// re-assesses its Sync.
func (w *Watcher) followsStatus(gvk schema.GroupVersionKind, namespace, name string) bool {
	if w.ignoreStatus {
		return false
	}
	if followedKinds[gvk.GroupKind()] && !w.onlyUnsettled {
		return true
	}
	w.unsettledMu.Lock()
	defer w.unsettledMu.Unlock()
	return w.unsettled[v1alpha1.NewObjectRef(gvk, namespace, name)]
}

// ResourceVersion reports an object's resourceVersion from the informer of its kind,
// when that informer runs and has synced: "" for an object it does not hold.
func (w *Watcher) ResourceVersion(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (string, bool) {
	w.mu.Lock()
	k, ok := w.kinds[gvk]
	w.mu.Unlock()
	if !ok || !k.informer.HasSynced() {
		return "", false
	}
	// Only the version is read: the cached object is not copied first, and the
	// object it is read into is one of lookups, emptied before it goes back (it
	// shares the cached object's maps).
	obj := lookups.Get().(*metav1.PartialObjectMetadata)
	defer func() {
		*obj = metav1.PartialObjectMetadata{}
		lookups.Put(obj)
	}()
	obj.SetGroupVersionKind(gvk)
	if err := w.cache.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj, client.UnsafeDisableDeepCopy); err != nil {
		return "", apierrors.IsNotFound(err)
	}
	return obj.GetResourceVersion(), true
}

// lookups are the objects ResourceVersion reads the cache into: the apply asks
// for every object of a Sync at each reconcile.
var lookups = gosync.Pool{New: func() any { return &metav1.PartialObjectMetadata{} }}

// Prepare starts watching kinds for sync before its objects are applied, so that the
// apply learns from the watch which objects do not exist yet instead of reading each
// one, and waits at most timeout for the informers to sync. Kinds the API server does
// not serve (yet: a CRD of the same revision) are left for Track. Kinds that the
// Sync ends up not having in the cluster are released by its next Track.
func (w *Watcher) Prepare(ctx context.Context, sync types.NamespacedName, kinds []schema.GroupVersionKind, timeout time.Duration) {
	w.mu.Lock()
	var informers []cache.Informer
	for _, gvk := range kinds {
		if k, ok := w.kinds[gvk]; ok && k.users[sync] {
			informers = append(informers, k.informer)
			continue
		}
		if err := w.use(ctx, gvk, sync); err != nil {
			continue
		}
		w.syncs[sync] = append(w.syncs[sync], gvk)
		informers = append(informers, w.kinds[gvk].informer)
	}
	w.mu.Unlock()
	waitSynced(ctx, informers, timeout)
}

// syncPollCap is the longest waitSynced waits between two looks at its informers.
const syncPollCap = 20 * time.Millisecond

// waitSynced waits at most timeout for every informer to have synced. An informer
// of a few kinds syncs within milliseconds of its LIST: the wait starts at a
// millisecond and doubles up to syncPollCap, where a fixed 20 ms poll made every
// first sync wait for its next tick (a sixth of what a first sync spends between
// its requests). A look is a few atomic loads.
func waitSynced(ctx context.Context, informers []cache.Informer, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	backoff := wait.Backoff{Duration: time.Millisecond, Factor: 2, Cap: syncPollCap, Steps: math.MaxInt32}
	_ = backoff.DelayFunc().Until(ctx, true, false, func(context.Context) (bool, error) {
		for _, inf := range informers {
			if !inf.HasSynced() {
				return false, nil
			}
		}
		return true, nil
	})
}

// HasSynced reports whether every informer the Watcher runs has synced.
func (w *Watcher) HasSynced() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range w.kinds {
		if !k.informer.HasSynced() {
			return false
		}
	}
	return true
}

// use starts watching gvk for sync, sharing the informer with other Syncs.
func (w *Watcher) use(ctx context.Context, gvk schema.GroupVersionKind, sync types.NamespacedName) error {
	if k, ok := w.kinds[gvk]; ok {
		k.users[sync] = true
		return nil
	}
	inf, err := w.cache.GetInformer(ctx, metadataOf(gvk), cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("watching %s: %w", gvk.Kind, err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) { w.onUpdate(gvk, oldObj, newObj) },
		DeleteFunc: w.onDelete,
	})
	if err != nil {
		return fmt.Errorf("watching %s: %w", gvk.Kind, err)
	}
	w.kinds[gvk] = &watchedKind{informer: inf, registration: reg, users: map[types.NamespacedName]bool{sync: true}}
	return nil
}

// release stops watching gvk for sync, and stops the informer when nobody uses it.
func (w *Watcher) release(ctx context.Context, gvk schema.GroupVersionKind, sync types.NamespacedName) {
	k, ok := w.kinds[gvk]
	if !ok {
		return
	}
	delete(k.users, sync)
	if len(k.users) > 0 {
		return
	}
	_ = k.informer.RemoveEventHandler(k.registration)
	_ = w.cache.RemoveInformer(ctx, metadataOf(gvk))
	delete(w.kinds, gvk)
}

// onUpdate enqueues the owner of a changed object of kind gvk, unless only its
// status moved: a status write keeps generation, labels and annotations, and cannot
// be drift from git. A status change that may tell a change of health
// (followsStatus) is enqueued too, to re-assess the Sync's health.
func (w *Watcher) onUpdate(gvk schema.GroupVersionKind, oldObj, newObj any) {
	o, oldOK := oldObj.(*metav1.PartialObjectMetadata)
	n, newOK := newObj.(*metav1.PartialObjectMetadata)
	if !oldOK || !newOK {
		return
	}
	statusOnly := n.Generation != 0 && n.Generation == o.Generation &&
		equality.Semantic.DeepEqual(n.Labels, o.Labels) && equality.Semantic.DeepEqual(n.Annotations, o.Annotations)
	if !statusOnly || w.followsStatus(gvk, n.Namespace, n.Name) {
		w.enqueueOwner(n)
	}
}

func (w *Watcher) onDelete(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		w.enqueueOwner(m)
	}
}

// Enqueue queues a reconcile of the Sync key.
func (w *Watcher) Enqueue(key types.NamespacedName) {
	w.events <- event.GenericEvent{Object: &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
}

func (w *Watcher) enqueueOwner(obj *metav1.PartialObjectMetadata) {
	ns, name, ok := strings.Cut(obj.Annotations[v1alpha1.OwnedByAnnotation], "/")
	if !ok || ns == "" || name == "" || w.serves != nil && !w.serves[ns] {
		return
	}
	w.events <- event.GenericEvent{Object: &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
}

func metadataOf(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	return obj
}
