package ui

import (
	"errors"
	"net/http/httptest"
	"testing"
	"time"
)

// One user signing in again and again takes at most MaxSessionsPerUser places,
// reserved before any watch starts, and the next user still gets in; places
// reserved and not used are given back.
func TestOneUserCannotTakeEverySession(t *testing.T) {
	start := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	ss := newSessionsPerUser(100, DefaultMaxSessionsPerUser)
	var refused error
	kept := 0
	for range 100 {
		res, err := ss.reserve("alice")
		if err != nil {
			refused = err
			continue
		}
		res.attach(&viewer{live: newBroker()}, "", "", start)
		kept++
	}
	if kept != DefaultMaxSessionsPerUser || !errors.Is(refused, errTooManyOwnSessions) {
		t.Fatalf("alice signing in 100 times kept %d sessions (last refusal %v); want %d and errTooManyOwnSessions", kept, refused, DefaultMaxSessionsPerUser)
	}
	bob, err := ss.reserve("bob")
	if err != nil {
		t.Fatalf("the next user is refused: %v", err)
	}
	bob.release()
	bob.release() // twice is once
	if ss.pending != 0 || ss.held["bob"] != 0 {
		t.Errorf("a released place is still held: %d pending, %d of bob's", ss.pending, ss.held["bob"])
	}
	t.Run("places reserved count against the server's bound", func(t *testing.T) {
		small := newSessionsPerUser(2, 2)
		if _, err := small.reserve("a"); err != nil {
			t.Fatal(err)
		}
		if _, err := small.reserve("b"); err != nil {
			t.Fatal(err)
		}
		if _, err := small.reserve("c"); !errors.Is(err, errTooManySessions) {
			t.Errorf("a third place of two while two sign-ins are starting: %v, want errTooManySessions", err)
		}
	})
}

// The sessions of one identity share one viewer, which ends with the last.
func TestSessionsOfOneIdentityShareTheirWatch(t *testing.T) {
	start := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	ss := newSessionsPerUser(10, 10)
	ended := 0
	v := &viewer{live: newBroker(), stop: func() { ended++ }}
	if got := ss.viewerFor("alice"); got != nil {
		t.Fatal("a viewer before any sign-in")
	}
	r1, _ := ss.reserve("alice")
	first := r1.attach(ss.shareViewer("alice", v), "alice", "", start)
	r2, _ := ss.reserve("alice")
	shared := ss.viewerFor("alice")
	if shared != v {
		t.Fatal("the second session of alice does not share the first one's viewer")
	}
	second := r2.attach(shared, "alice", "", start)
	other := &viewer{live: newBroker(), stop: func() { t.Error("a viewer started by a losing sign-in was kept") }}
	if got := ss.shareViewer("alice", other); got != v {
		t.Error("a viewer started at the same time replaced the shared one")
	}
	ss.unshare("alice") // that sign-in's reference, given back

	ss.remove(first)
	if ended != 0 {
		t.Fatal("the shared watch ended with the first of two sessions")
	}
	ss.remove(second)
	if ended != 1 || ss.viewerFor("alice") != nil {
		t.Errorf("after the last session: watch ended %d times, viewer kept %v; want ended once, none kept", ended, ss.viewerFor("alice") != nil)
	}
}

// The sign-in form is rate-limited per client address.
func TestSignInsAreRateLimitedPerClient(t *testing.T) {
	now := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	ss := newSessions(10)
	from := func(addr string) bool {
		r := httptest.NewRequest("POST", "/login", nil)
		r.RemoteAddr = addr
		return ss.allowSignIn(r, now)
	}
	for i := range signInBurst {
		if !from("10.0.0.1:40000") {
			t.Fatalf("sign-in %d of a burst of %d refused", i+1, signInBurst)
		}
	}
	if from("10.0.0.1:40001") {
		t.Error("a sign-in past the burst, from another port of the same address, was allowed")
	}
	if !from("10.0.0.2:40000") {
		t.Error("another client was refused")
	}
	now = now.Add(time.Minute / signInsPerMinute)
	if !from("10.0.0.1:40002") || from("10.0.0.1:40003") {
		t.Error("after a tenth of a minute: want one more sign-in allowed, and only one")
	}
}
