package sync

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"tether.dev/tether/api/v1alpha1"
)

// intervalBoundedLimiter is the per-Sync exponential backoff after errors, never
// longer than the Sync's own interval: a Sync that failed through a long API
// outage is tried again within one interval of the API server's return, not after
// a backoff as long as the outage (up to the maximum). A Sync the cache does not
// hold keeps the plain backoff.
type intervalBoundedLimiter struct {
	workqueue.TypedRateLimiter[reconcile.Request]
	intervalOf func(reconcile.Request) (time.Duration, bool)
}

func cappedBackoff(minBackoff, maxBackoff time.Duration, intervalOf func(reconcile.Request) (time.Duration, bool)) workqueue.TypedRateLimiter[reconcile.Request] {
	return &intervalBoundedLimiter{
		TypedRateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](minBackoff, maxBackoff),
		intervalOf:       intervalOf,
	}
}

func (l *intervalBoundedLimiter) When(req reconcile.Request) time.Duration {
	d := l.TypedRateLimiter.When(req)
	if interval, ok := l.intervalOf(req); ok && interval < d {
		return interval
	}
	return d
}

// intervalOf reads a Sync's interval from c (the manager's cache: no request).
func (r *Reconciler) intervalOf(c client.Reader) func(reconcile.Request) (time.Duration, bool) {
	return func(req reconcile.Request) (time.Duration, bool) {
		obj := &v1alpha1.Sync{}
		// The workqueue asks without a context; a read of the cache is in memory.
		if err := c.Get(context.Background(), req.NamespacedName, obj); err != nil { //nolint:forbidigo // see above
			return 0, false
		}
		return r.interval(obj), true
	}
}
