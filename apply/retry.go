package apply

import (
	"context"
	"errors"
	"io"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
)

// transientBackoff bounds how a request that failed for a reason of the moment (a
// server error, a dropped connection, throttling) is retried within one apply: a few
// attempts, backing off, before the object fails. Without it, a revision of forty
// objects validates only if all eighty of its requests succeed at once, which an
// API server failing one request in five almost never allows; each failed attempt
// would then cost the whole revision again.
var transientBackoff = wait.Backoff{Steps: 4, Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.2}

// isTransient reports whether err is a failure of the moment, not of the request:
// retrying the same request may succeed. Every request Tether retries is idempotent
// (reads, server-side applies, dry-runs).
func isTransient(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) || errors.Is(err, io.ErrUnexpectedEOF)
}

// retryTransient runs fn, again after a backoff while it fails transiently, until
// transientBackoff is spent or ctx ends.
func retryTransient(ctx context.Context, fn func() error) error {
	backoff := transientBackoff
	for {
		err := fn()
		if err == nil || !isTransient(err) || backoff.Steps <= 1 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff.Step()):
		}
	}
}
