package git

import (
	"context"
	"fmt"
	"testing"
	"time"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/harness"
)

const host = "git.example.com"

type entered struct {
	release func()
	reason  string
	err     error
}

// enter calls Enter in its own goroutine and returns where its answer comes.
func enter(g *HostGate, tenant, key string, now time.Time) <-chan entered {
	out := make(chan entered, 1)
	go func() {
		release, reason, err := g.Enter(context.Background(), host, tenant, key, 0, now)
		out <- entered{release, reason, err}
	}()
	return out
}

// answer is what ch gives, or fails the test after a minute without one.
func answer(t *testing.T, ch <-chan entered, who string) entered {
	t.Helper()
	select {
	case got := <-ch:
		return got
	case <-time.After(time.Minute):
		t.Fatalf("%s got no answer from the gate in a minute", who)
		return entered{}
	}
}

func mustEnter(t *testing.T, g *HostGate, tenant, key string, now time.Time) func() {
	t.Helper()
	release, reason, err := g.Enter(t.Context(), host, tenant, key, 0, now)
	if err != nil {
		t.Fatalf("Enter(%s): %s: %v", key, reason, err)
	}
	return release
}

// waitInLine returns once n callers wait in the host's line.
func waitInLine(t *testing.T, g *HostGate, n int) {
	t.Helper()
	harness.Eventually(t, time.Minute, fmt.Sprintf("%d callers in the host's line", n), func(context.Context) (bool, error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.line[host]) == n, nil
	})
}

// TestAHostsLineServesWhoWasServedLeastRecentlyFirst is the starvation that a
// Sync polling every 10 s met among Syncs polling a busy host every second: it
// came back to a host whose places and line the often-served callers held, and
// was told the host was busy every time. Now it takes the line's place of the
// caller served most recently, and the next free place is its.
func TestAHostsLineServesWhoWasServedLeastRecentlyFirst(t *testing.T) {
	g := NewHostGate(1, time.Minute) // one place, a line of one
	g.Wait = time.Hour               // nobody leaves the line by waiting too long here
	t0 := time.Unix(1000, 0)

	mustEnter(t, g, "team", "often", t0)() // served at t0
	holder := mustEnter(t, g, "team", "holder", t0.Add(time.Second))

	often := enter(g, "team", "often", t0.Add(2*time.Second))
	waitInLine(t, g, 1)
	rare := enter(g, "team", "rare", t0.Add(3*time.Second)) // never served

	got := answer(t, often, "the caller served a moment ago")
	if got.err == nil || got.reason != v1alpha1.ReasonHostBusy {
		t.Fatalf("the caller served a moment ago: %s, %v; want it told %s, its place in line given to one never served", got.reason, got.err, v1alpha1.ReasonHostBusy)
	}
	waitInLine(t, g, 1)
	// A caller served as recently as the one in line finds the line full.
	if _, reason, err := g.Enter(t.Context(), host, "team", "often", 0, t0.Add(4*time.Second)); reason != v1alpha1.ReasonHostBusy {
		t.Errorf("a newcomer served after the one in line: %s, %v; want %s", reason, err, v1alpha1.ReasonHostBusy)
	}

	holder()
	got = answer(t, rare, "the caller never served")
	if got.err != nil {
		t.Fatalf("the caller never served: %s, %v; want the place its line came to", got.reason, got.err)
	}
	got.release()
	waitInLine(t, g, 0)
}

func TestACallerInLineTakesAPlaceThatComesFree(t *testing.T) {
	g := NewHostGate(1, time.Minute)
	g.Wait = time.Hour
	now := time.Unix(1000, 0)
	holder := mustEnter(t, g, "team", "a", now)
	b := enter(g, "team", "b", now)
	waitInLine(t, g, 1)

	// A newcomer is not admitted ahead of someone admissible in line.
	c := enter(g, "team", "c", now)
	if got := answer(t, c, "the newcomer"); got.reason != v1alpha1.ReasonHostBusy {
		t.Errorf("a newcomer behind a full line: %s, %v; want %s", got.reason, got.err, v1alpha1.ReasonHostBusy)
	}
	holder()
	got := answer(t, b, "the caller in line")
	if got.err != nil {
		t.Fatalf("the caller in line: %s, %v; want admitted when the place came free", got.reason, got.err)
	}
	got.release()
	got.release() // a second release changes nothing
	mustEnter(t, g, "team", "d", now)()
}

func TestACallerInLineIsToldTheHostIsBusyWhenNoPlaceComesFreeInTime(t *testing.T) {
	g := NewHostGate(1, time.Minute)
	g.Wait = 20 * time.Millisecond
	now := time.Unix(1000, 0)
	defer mustEnter(t, g, "team", "a", now)()

	_, reason, err := g.Enter(t.Context(), host, "team", "b", 0, now)
	if reason != v1alpha1.ReasonHostBusy || err == nil {
		t.Fatalf("reason %s, %v; want %s after the wait", reason, err, v1alpha1.ReasonHostBusy)
	}
	waitInLine(t, g, 0)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	g.Wait = time.Hour
	if _, reason, err := g.Enter(ctx, host, "team", "c", 0, now); reason != v1alpha1.ReasonHostBusy || err == nil {
		t.Fatalf("a caller whose context ended: %s, %v; want %s", reason, err, v1alpha1.ReasonHostBusy)
	}
	waitInLine(t, g, 0)
}

// TestAnotherTenantIsAdmittedPastALineOfOneThatHasItsShare: the line does not
// undo the tenants' fairness: a waiter whose tenant has its share does not
// hold back a tenant with nothing running.
func TestAnotherTenantIsAdmittedPastALineOfOneThatHasItsShare(t *testing.T) {
	g := NewHostGate(2, time.Minute)
	g.Wait = time.Hour
	now := time.Unix(1000, 0)
	first := mustEnter(t, g, "greedy", "1", now)
	defer mustEnter(t, g, "greedy", "2", now)()
	third := enter(g, "greedy", "3", now)
	waitInLine(t, g, 1)

	mustEnter(t, g, "patient", "1", now)()
	first()
	if got := answer(t, third, "the greedy tenant's waiter"); got.err != nil {
		t.Fatalf("the greedy tenant's waiter: %s, %v; want admitted when its own place came free", got.reason, got.err)
	} else {
		got.release()
	}
}
