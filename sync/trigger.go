package sync

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
)

// ReconcileRequestedAnnotation on a Sync asks for a reconcile that looks at git at
// once (see v1alpha1.ReconcileRequestedAnnotation). A push received by a replica
// that is not the leader is passed on this way; a user can do the same with
// `tether reconcile` ("flux reconcile", "argocd app get --refresh").
const ReconcileRequestedAnnotation = v1alpha1.ReconcileRequestedAnnotation

// Refresher forgets what a Source knows of a repository's refs.
type Refresher interface {
	Refresh(url string)
}

var _ Refresher = (*source.Source)(nil)

// Trigger turns a push notification into reconciles of the Syncs it concerns: each
// Sync (from the manager's cache) whose repository URL matches the push (see
// source.NormalizeURL) and that follows the pushed branch (or, for a tag push, that
// tag or any semver range) has its repository refreshed and is queued at once.
//
// Only the leader reconciles, but a git host reaches whichever replica the Service
// picks. A replica that is not the leader therefore passes the push on by setting
// ReconcileRequestedAnnotation on each Sync concerned; the leader's Trigger watches
// for that and does the rest.
type Trigger struct {
	client  client.Client
	cache   cache.Cache
	source  Refresher
	elected <-chan struct{}
	events  chan event.GenericEvent
	now     func() time.Time
}

// NewTrigger returns a Trigger that lists and annotates Syncs through c (the
// manager's client), watches them in cache, refreshes repositories in src, and
// is the leader once elected is closed (mgr.Elected()).
func NewTrigger(c client.Client, cache cache.Cache, src Refresher, elected <-chan struct{}) *Trigger {
	return &Trigger{client: c, cache: cache, source: src, elected: elected, events: make(chan event.GenericEvent, 1024), now: time.Now}
}

// registrySettle is how long after a registry's notification its push is
// acted on (see OnPush): Distribution links a tag within milliseconds of
// announcing it.
const registrySettle = time.Second

// OnPush schedules the Syncs a push concerns; it is the webhook receiver's callback.
func (t *Trigger) OnPush(ctx context.Context, push source.Push) error {
	log := ctrl.LoggerFrom(ctx).WithValues("urls", push.URLs, "branch", push.Branch, "tag", push.Tag)
	syncs := &v1alpha1.SyncList{}
	if err := t.client.List(ctx, syncs); err != nil {
		return fmt.Errorf("listing Syncs: %w", err)
	}
	leader := t.isLeader()
	var concerned []*v1alpha1.Sync
	for i := range syncs.Items {
		if s := &syncs.Items[i]; concerns(push, s) {
			concerned = append(concerned, s)
		}
	}
	matched := len(concerned)
	schedule := func(ctx context.Context) error {
		for _, s := range concerned {
			if !leader {
				if err := t.request(ctx, s); err != nil {
					return err
				}
				continue
			}
			t.source.Refresh(sourceURL(s))
			select {
			case t.events <- event.GenericEvent{Object: s}:
			default:
				// The queue is far behind; the next interval polls anyway.
				log.Info("push dropped: too many pending", "sync", client.ObjectKeyFromObject(s))
			}
		}
		return nil
	}
	if push.Registry && matched > 0 {
		// CNCF Distribution announces a manifest before it links the tag to
		// it: asked at once, the registry may not serve the tag yet (or
		// serve its former manifest), and the Sync would wait for its
		// interval. The push is acted on once the registry has settled.
		time.AfterFunc(registrySettle, func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if err := schedule(ctx); err != nil {
				log.Error(err, "scheduling a registry's push")
			}
		})
	} else if err := schedule(ctx); err != nil {
		return err
	}
	log.V(1).Info("push received", "syncs", matched, "leader", leader)
	return nil
}

// concerns reports whether a push may move what s follows: a push to its git
// repository's branch or tag, or a tag pushed to its OCI artifact's
// repository.
func concerns(push source.Push, s *v1alpha1.Sync) bool {
	if s.Spec.Suspend || s.Spec.Source.Chart != nil || !matchesURL(push.URLs, sourceURL(s)) {
		return false
	}
	if o := s.Spec.Source.OCI; o != nil {
		return push.Tag != "" && (o.Ref.Tag == push.Tag || o.Ref.SemVer != "")
	}
	ref := s.Spec.Source.Ref
	if ref == (v1alpha1.GitRef{}) {
		ref.Branch = "main"
	}
	if push.Branch != "" {
		return ref.Branch == push.Branch
	}
	return ref.Tag == push.Tag || ref.SemVer != ""
}

func matchesURL(urls []string, url string) bool {
	n := source.NormalizeURL(url)
	for _, u := range urls {
		if n != "" && u == n {
			return true
		}
	}
	return false
}

func (t *Trigger) isLeader() bool {
	select {
	case <-t.elected:
		return true
	default:
		return false
	}
}

// request passes a push on to the leader through ReconcileRequestedAnnotation.
func (t *Trigger) request(ctx context.Context, s *v1alpha1.Sync) error {
	patch := client.MergeFrom(s.DeepCopy())
	annotations := s.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[ReconcileRequestedAnnotation] = t.now().UTC().Format(time.RFC3339Nano)
	s.SetAnnotations(annotations)
	if err := t.client.Patch(ctx, s, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("requesting a reconcile of Sync %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// Source feeds the reconciler the Syncs that pushes concern: those OnPush queues
// on the leader, and those whose ReconcileRequestedAnnotation changes (set by a
// replica that is not the leader, or by a user), whose reconcile then asks git
// itself, no more often than the minimum interval per repository. Controller
// sources start on the leader only.
func (t *Trigger) Source() crsource.Source {
	requested := crsource.Kind(t.cache, &v1alpha1.Sync{}, handler.TypedFuncs[*v1alpha1.Sync, reconcile.Request]{
		UpdateFunc: t.onUpdate,
	})
	pushed := crsource.Channel(t.events, &handler.EnqueueRequestForObject{})
	return crsource.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		if err := pushed.Start(ctx, q); err != nil {
			return err
		}
		return requested.Start(ctx, q)
	})
}

// onUpdate queues a Sync whose ReconcileRequestedAnnotation changed to a new value,
// one that accepts a new commit (v1alpha1.AcceptRevisionAnnotation), and one whose
// pin (v1alpha1.PinRevisionAnnotation) was set, changed or removed, none of which
// changes its generation.
func (t *Trigger) onUpdate(_ context.Context, e event.TypedUpdateEvent[*v1alpha1.Sync], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	changed := func(key string) bool {
		after := e.ObjectNew.GetAnnotations()[key]
		return after != "" && after != e.ObjectOld.GetAnnotations()[key]
	}
	// A request for a reconcile refreshes nothing here: the reconcile asks git
	// itself, at most once per repository per minimum interval (requestSpacing),
	// so that a loop of annotation changes cannot make the host list refs in a
	// loop.
	pin := v1alpha1.PinRevisionAnnotation
	repinned := e.ObjectNew.GetAnnotations()[pin] != e.ObjectOld.GetAnnotations()[pin]
	if !changed(ReconcileRequestedAnnotation) && !changed(v1alpha1.AcceptRevisionAnnotation) && !repinned {
		return
	}
	q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.ObjectNew)})
}
