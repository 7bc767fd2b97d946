package git

import (
	"fmt"
	gosync "sync"
	"time"

	"tether.dev/tether/api/v1alpha1"
)

// HostGate keeps one slow or dead git host from holding every worker: it bounds
// the network conversations with each host running at once, and remembers for a
// while that a host could not be reached, so that the Syncs on it fail at once
// instead of each waiting out the timeout.
//
// The places of a host are shared fairly between tenants (namespaces), so that
// one namespace's Syncs cannot make another's wait: a tenant alone on a host may
// take all max places; while others run conversations there, a tenant takes at
// most its share (max divided by the tenants running there, at least one); and
// a tenant with nothing running on the host is admitted even when the shared
// places are taken, up to twice max conversations in all, so that it never
// waits for conversations of other namespaces to end.
type HostGate struct {
	max    int
	memory time.Duration

	mu gosync.Mutex
	// running counts the conversations running, by host and tenant.
	running map[string]map[string]int
	failure map[string]hostFailure
}

type hostFailure struct {
	at  time.Time
	err error
}

func NewHostGate(maxPerHost int, memory time.Duration) *HostGate {
	return &HostGate{max: maxPerHost, memory: memory, running: map[string]map[string]int{}, failure: map[string]hostFailure{}}
}

// enter admits one conversation of tenant with host, or says at once why not:
// the host failed a moment ago (v1alpha1.ReasonHostUnreachable) or has as many
// conversations running as tenant may have (v1alpha1.ReasonHostBusy). A host of "" (a
// local file:// repository) is always admitted. A failure is remembered for the
// gate's memory, but never longer than maxAge (the caller's poll interval, less
// jitter), when set: a Sync asks its host again at every poll, so that it
// recovers within one interval of the host's return.
func (g *HostGate) Enter(host, tenant string, maxAge time.Duration, now time.Time) (release func(), reason string, err error) {
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
		return nil, v1alpha1.ReasonHostUnreachable, fmt.Errorf("not asked again for %s after a failure: %w", memory, f.err)
	}
	tenants := g.running[host]
	if !g.admits(tenants, tenant) {
		return nil, v1alpha1.ReasonHostBusy, fmt.Errorf("%s already has %d fetches running, %d of them for this namespace, the most allowed at once", host, total(tenants), tenants[tenant])
	}
	if tenants == nil {
		tenants = map[string]int{}
		g.running[host] = tenants
	}
	tenants[tenant]++
	var once gosync.Once
	return func() { once.Do(func() { g.leave(host, tenant) }) }, "", nil
}

// admits reports whether tenant may start one more conversation with a host
// that has tenants running (see HostGate).
func (g *HostGate) admits(tenants map[string]int, tenant string) bool {
	all, mine := total(tenants), tenants[tenant]
	if mine == 0 {
		return all < 2*g.max
	}
	share := max(1, g.max/len(tenants))
	return all < g.max && mine < share
}

func total(tenants map[string]int) int {
	n := 0
	for _, c := range tenants {
		n += c
	}
	return n
}

func (g *HostGate) leave(host, tenant string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	tenants := g.running[host]
	if tenants[tenant]--; tenants[tenant] <= 0 {
		delete(tenants, tenant)
	}
	if len(tenants) == 0 {
		delete(g.running, host)
	}
}

// failed remembers that host could not be reached at now.
func (g *HostGate) Failed(host string, now time.Time, err error) {
	if host == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failure[host] = hostFailure{at: now, err: err}
}

// answered forgets an earlier failure of host.
func (g *HostGate) Answered(host string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.failure, host)
}
