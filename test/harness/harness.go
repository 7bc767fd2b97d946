// Package harness holds what every test package of Tether waits and fails with:
// one Eventually with one deadline rule, Must, and free loopback addresses. The
// control plane (test/controlplane), the git server (test/gitserver) and the agent
// binary (test/agentbin) are packages of their own; this one has no state.
package harness

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Poll is how often Eventually asks its condition again.
const Poll = 100 * time.Millisecond

// Eventually asks cond every Poll until it holds, and fails tb once timeout has
// passed, naming what it waited for and the last error cond returned (or that it
// never held). The deadline is timeout from the call, whatever the test's own
// context: Eventually works in a Cleanup too, after that context is cancelled. An
// error cond returns at or after the deadline (a request cut short by it, or
// refused by a client's rate limiter because it would end after it) is not the
// last error: the one before it says more.
func Eventually(tb testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(tb.Context()), timeout)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, Poll, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil && ctx.Err() == nil && !strings.Contains(err.Error(), "would exceed context deadline") {
			last = err
		}
		return ok && err == nil, nil
	})
	if err != nil {
		tb.Fatalf("waiting until %s: %v (last error: %v)", what, err, last)
	}
}

// Must fails tb at once with err, if err is not nil.
func Must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// FreeAddr returns a loopback address ("127.0.0.1:port") with a port that was
// free when asked, for a server the test starts next.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
