// Package harness holds what every test package of Tether waits and fails with:
// one Eventually with one deadline rule, WaitForSync over it, Must, and free
// loopback addresses. The control plane (test/controlplane), the git server
// (test/gitserver), the agent binary (test/agentbin) and the in-process agent
// (test/rig) are packages of their own; this one has no state.
package harness

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
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
// free when asked (FreePort), for a server the test starts next.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	port, err := FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// lowestPort is the lowest port FreePort hands out: above the well-known and most
// registered services' ports.
const lowestPort = 10000

// FreePort returns a TCP port on 127.0.0.1 that is free now, for a server a test
// starts next (a process of its own, which must be told its port). The port is
// taken below the kernel's ephemeral range (net.ipv4.ip_local_port_range), from
// which the kernel picks the source port of every outgoing connection and the port
// of every listen on port 0: a port from that range, free when asked, may be taken
// by any connection of any process before the server binds it (an agent's metrics
// listener lost its port so, in a run of every package at once). Below the range
// only another FreePort picks, at random among thousands, and a port in use is
// passed over.
func FreePort() (int, error) {
	low := ephemeralLow()
	if low-lowestPort < 1000 { // an unusual range: leave the choice to the kernel
		return kernelPort()
	}
	for range 100 {
		port := lowestPort + rand.IntN(low-lowestPort)
		if !handOut(port) {
			continue // handed out already: its server may not have bound it yet
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		if err := l.Close(); err != nil {
			return 0, err
		}
		return port, nil
	}
	return 0, fmt.Errorf("no free port between %d and %d in 100 tries", lowestPort, low)
}

// handedOut are the ports FreePort has returned in this process: two servers
// of one test (an agent's health and webhook listeners) once drew the same
// port, free when each was asked, before either had bound it.
var (
	handedOutMu sync.Mutex
	handedOut   = map[int]bool{}
)

// handOut records port as handed out, and reports whether it was not already.
func handOut(port int) bool {
	handedOutMu.Lock()
	defer handedOutMu.Unlock()
	if handedOut[port] {
		return false
	}
	handedOut[port] = true
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's default,
// 32768, where /proc does not say).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return 32768
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return 32768
	}
	return low
}

// kernelPort is a port the kernel chose as free.
func kernelPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Buffer is output that one goroutine or process writes while the test reads it
// (an agent's log, a server's): a bytes.Buffer behind a mutex.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
