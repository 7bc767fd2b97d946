package git

import (
	"context"
	"fmt"
	"slices"
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
//
// The places are shared fairly between callers too. A caller that finds no
// place waits in the host's line, for a short while (Wait), and the line is
// served least recently served first: a caller (one repository, ref and
// credentials) that the host answered a moment ago waits behind one it has not
// answered for a while, and a newcomer admissible at once is not admitted
// while someone admissible waits. The line holds at most half max callers (at
// least one), so that a silent host holds at most one and a half times max
// workers of one tenant; a caller that
// finds it full takes the place of its most recently served caller when it
// was served longer ago than that one (which is told the host is busy),
// and is told the host is busy otherwise. So many Syncs that poll a busy host
// often cannot starve one that polls it rarely: the rare one is next in line
// whenever it comes back.
type HostGate struct {
	max    int
	memory time.Duration
	// Wait bounds how long a caller waits in a host's line before it is told
	// the host is busy.
	Wait time.Duration

	mu gosync.Mutex
	// running counts the conversations running, by host and tenant.
	running map[string]map[string]int
	// line holds the callers waiting, by host, least recently served first.
	line map[string][]*waiter
	// served is when each caller (host, then key) was last admitted.
	served map[string]map[string]time.Time
	// swept is when served last lost what is older than servedMemory.
	swept   time.Time
	failure map[string]hostFailure
}

type hostFailure struct {
	at  time.Time
	err error
}

// waiter is a caller in a host's line; done is closed when it is admitted or
// pushed out of the line.
type waiter struct {
	tenant, key string
	// last is when the caller was last served; asked, when it came to the line
	// (the time it counts as served when admitted from it: the gate's one clock
	// is its callers').
	last, asked time.Time
	done        chan struct{}
	admitted    bool
}

// DefaultHostWait is how long a caller waits in a host's line by default.
const DefaultHostWait = 2 * time.Second

// servedMemory bounds how long the gate remembers when a caller was served; an
// older caller counts as never served (first in line).
const servedMemory = time.Hour

func NewHostGate(maxPerHost int, memory time.Duration) *HostGate {
	return &HostGate{
		max: maxPerHost, memory: memory, Wait: DefaultHostWait,
		running: map[string]map[string]int{}, line: map[string][]*waiter{},
		served: map[string]map[string]time.Time{}, failure: map[string]hostFailure{},
	}
}

// Enter admits one conversation of tenant with host for the caller key (what
// identifies a poller: its repository, ref and credentials), or says why not:
// the host failed a moment ago (v1alpha1.ReasonHostUnreachable, at once) or has
// as many conversations running as tenant may have and no place came free for
// the caller in the host's line within the gate's Wait (v1alpha1.ReasonHostBusy).
// A host of "" (a local file:// repository) is always admitted. A failure is
// remembered for the gate's memory, but never longer than maxAge (the caller's
// poll interval, less jitter), when set: a Sync asks its host again at every
// poll, so that it recovers within one interval of the host's return.
func (g *HostGate) Enter(ctx context.Context, host, tenant, key string, maxAge time.Duration, now time.Time) (release func(), reason string, err error) {
	if host == "" {
		return func() {}, "", nil
	}
	memory := g.memory
	if maxAge > 0 {
		memory = min(memory, maxAge)
	}
	g.mu.Lock()
	if f, ok := g.failure[host]; ok && now.Sub(f.at) < memory {
		g.mu.Unlock()
		// No "ago" in the message: conditions carry it, and must not change with time.
		return nil, v1alpha1.ReasonHostUnreachable, fmt.Errorf("not asked again for %s after a failure: %w", memory, f.err)
	}
	release = func() { g.leave(host, tenant) }
	if g.admits(g.running[host], tenant) && !g.anyAdmissible(host) {
		g.admit(host, tenant, key, now)
		g.mu.Unlock()
		return onlyOnce(release), "", nil
	}
	w := &waiter{tenant: tenant, key: key, last: g.lastServed(host, key, now), asked: now, done: make(chan struct{})}
	if !g.queue(host, w) {
		busy := g.busy(host, tenant)
		g.mu.Unlock()
		return nil, v1alpha1.ReasonHostBusy, busy
	}
	g.mu.Unlock()

	timer := time.NewTimer(g.Wait)
	defer timer.Stop()
	select {
	case <-w.done:
	case <-timer.C:
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if w.admitted {
		return onlyOnce(release), "", nil
	}
	g.line[host] = slices.DeleteFunc(g.line[host], func(o *waiter) bool { return o == w })
	if len(g.line[host]) == 0 {
		delete(g.line, host)
	}
	if err := ctx.Err(); err != nil {
		return nil, v1alpha1.ReasonHostBusy, fmt.Errorf("waiting for a place with %s: %w", host, err)
	}
	return nil, v1alpha1.ReasonHostBusy, g.busy(host, tenant)
}

func onlyOnce(f func()) func() {
	var once gosync.Once
	return func() { once.Do(f) }
}

func (g *HostGate) busy(host, tenant string) error {
	tenants := g.running[host]
	return fmt.Errorf("%s already has %d fetches running, %d of them for this namespace, the most allowed at once", host, total(tenants), tenants[tenant])
}

// queue puts w in host's line in its place (least recently served first), and
// reports whether it found one; a full line gives up its most recently served
// caller for w when that one was served after w.
func (g *HostGate) queue(host string, w *waiter) bool {
	line := g.line[host]
	if len(line) >= max(1, g.max/2) {
		last := line[len(line)-1]
		if !w.last.Before(last.last) {
			return false
		}
		line = line[:len(line)-1]
		close(last.done) // told the host is busy
	}
	i, _ := slices.BinarySearchFunc(line, w, func(a, b *waiter) int {
		if a.last.After(b.last) || a.last.Equal(b.last) {
			return 1 // equals keep their order of arrival
		}
		return -1
	})
	g.line[host] = slices.Insert(line, i, w)
	return true
}

// anyAdmissible reports whether someone in host's line could be admitted now.
func (g *HostGate) anyAdmissible(host string) bool {
	tenants := g.running[host]
	for _, w := range g.line[host] {
		if g.admits(tenants, w.tenant) {
			return true
		}
	}
	return false
}

func (g *HostGate) admit(host, tenant, key string, now time.Time) {
	tenants := g.running[host]
	if tenants == nil {
		tenants = map[string]int{}
		g.running[host] = tenants
	}
	tenants[tenant]++
	served := g.served[host]
	if served == nil {
		served = map[string]time.Time{}
		g.served[host] = served
	}
	served[key] = now
}

// lastServed is when key was last admitted with host, or the zero time if it
// never was (or so long ago that the gate forgot). At most once a
// servedMemory it forgets, of every host, what is older than that: the sweep
// walks every caller the gate knows, too much for each caller that waits.
func (g *HostGate) lastServed(host, key string, now time.Time) time.Time {
	if now.Sub(g.swept) > servedMemory {
		for _, served := range g.served {
			for k, at := range served {
				if now.Sub(at) > servedMemory {
					delete(served, k)
				}
			}
		}
		g.swept = now
	}
	at := g.served[host][key]
	if now.Sub(at) > servedMemory {
		return time.Time{}
	}
	return at
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

// leave ends a conversation with host and admits the callers of its line that
// can be admitted now, in their order.
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
	line := g.line[host]
	for i := 0; i < len(line); {
		w := line[i]
		if !g.admits(g.running[host], w.tenant) {
			i++
			continue
		}
		g.admit(host, w.tenant, w.key, w.asked)
		w.admitted = true
		close(w.done)
		line = slices.Delete(line, i, i+1)
	}
	if len(line) == 0 {
		delete(g.line, host)
	} else {
		g.line[host] = line
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
