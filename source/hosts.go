package source

import (
	"fmt"
	gosync "sync"
	"time"
)

// hostGate keeps one slow or dead git host from holding every worker: it bounds
// the network conversations with each host running at once, and remembers for a
// while that a host could not be reached, so that the Syncs on it fail at once
// instead of each waiting out the timeout.
type hostGate struct {
	max    int
	memory time.Duration

	mu      gosync.Mutex
	running map[string]int
	failure map[string]hostFailure
}

type hostFailure struct {
	at  time.Time
	err error
}

func newHostGate(maxPerHost int, memory time.Duration) *hostGate {
	return &hostGate{max: maxPerHost, memory: memory, running: map[string]int{}, failure: map[string]hostFailure{}}
}

// enter admits one conversation with host, or says at once why not: the host
// failed a moment ago (ReasonHostUnreachable) or has as many conversations
// running as allowed (ReasonHostBusy). A host of "" (a local file:// repository)
// is always admitted. A failure is remembered for the gate's memory, but never
// longer than maxAge (the caller's poll interval, less jitter), when set: a Sync
// asks its host again at every poll, so that it recovers within one interval of
// the host's return.
func (g *hostGate) enter(host string, maxAge time.Duration, now time.Time) (release func(), reason string, err error) {
	if host == "" {
		return func() {}, "", nil
	}
	memory := g.memory
	if maxAge > 0 {
		memory = min(memory, maxAge)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if f, ok := g.failure[host]; ok && now.Sub(f.at) < memory {
		// No "ago" in the message: conditions carry it, and must not change with time.
		return nil, ReasonHostUnreachable, fmt.Errorf("not asked again for %s after a failure: %w", memory, f.err)
	}
	if g.running[host] >= g.max {
		return nil, ReasonHostBusy, fmt.Errorf("%s already has %d fetches running, the most allowed at once", host, g.max)
	}
	g.running[host]++
	var once gosync.Once
	return func() { once.Do(func() { g.leave(host) }) }, "", nil
}

func (g *hostGate) leave(host string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running[host]--; g.running[host] <= 0 {
		delete(g.running, host)
	}
}

// failed remembers that host could not be reached at now.
func (g *hostGate) failed(host string, now time.Time, err error) {
	if host == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failure[host] = hostFailure{at: now, err: err}
}

// answered forgets an earlier failure of host.
func (g *hostGate) answered(host string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.failure, host)
}
