package ui

import (
	"errors"
	"net"
	"net/http"
	"time"
)

// Sessions are shared fairly: a place is reserved for a session, by the whole
// server's bound (MaxSessions) and its user's (MaxSessionsPerUser), before any
// watch starts; sessions of one identity (the same user and groups, scoped to
// the same namespace) share one viewer and so one watch, which ends with the
// last of them; and the sign-in form is rate-limited per client address, so
// that one user signing in again and again neither takes every place nor
// starts a watch per attempt.

// DefaultMaxSessionsPerUser bounds one user's sessions by default: a few
// browsers and a proxy's token or two.
const DefaultMaxSessionsPerUser = 10

const (
	// signInsPerMinute and signInBurst bound one client address's sign-ins.
	signInsPerMinute = 10
	signInBurst      = 10
	// maxSignInClients bounds the addresses the rate limit remembers; past
	// it, those with a full allowance are forgotten first.
	maxSignInClients = 10_000
)

var (
	// errTooManyOwnSessions refuses a sign-in beyond MaxSessionsPerUser.
	errTooManyOwnSessions = errors.New("you have too many sessions open: sign out of one, or wait for one to expire")
	// errSignInRateLimited refuses a client signing in too often.
	errSignInRateLimited = errors.New("too many sign-ins from this address; wait a minute")
)

// reservation is a place for one session of identity, taken before its watch
// starts; attach turns it into the session, release gives it back.
type reservation struct {
	ss       *sessions
	identity string
	done     bool
}

// reserve takes a place for a session of identity ("" is not bounded per
// user), within MaxSessions and MaxSessionsPerUser, counting the places
// reserved and not yet attached.
func (ss *sessions) reserve(identity string) (*reservation, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.byID)+ss.pending >= ss.max {
		return nil, errTooManySessions
	}
	if identity != "" && ss.held[identity] >= ss.maxPerUser {
		return nil, errTooManyOwnSessions
	}
	ss.pending++
	if identity != "" {
		ss.held[identity]++
	}
	return &reservation{ss: ss, identity: identity}, nil
}

// release gives the place back unless attach used it; it may be called after
// attach, and more than once.
func (r *reservation) release() {
	r.ss.mu.Lock()
	defer r.ss.mu.Unlock()
	if r.done {
		return
	}
	r.done = true
	r.ss.pending--
	if r.identity != "" {
		r.ss.held[r.identity]--
	}
}

// attach starts a session on v in the place r reserved, for a proxy's token
// of hash bearer ("" for a sign-in), and returns its ID. viewerKey names v
// among the shared viewers ("" for one of its own, which the session ends).
func (r *reservation) attach(v *viewer, viewerKey, bearer string, now time.Time) string {
	ss := r.ss
	ss.mu.Lock()
	defer ss.mu.Unlock()
	r.done = true
	ss.pending--
	id := randomToken()
	ss.byID[id] = &session{csrf: randomToken(), viewer: v, started: now, seen: now, bearer: bearer, identity: r.identity, viewerKey: viewerKey}
	if bearer != "" {
		if old, ok := ss.byBearer[bearer]; ok { // two first requests at once
			ss.dropLocked(old)
		}
		ss.byBearer[bearer] = id
	}
	return id
}

// sharedViewer is the viewer of every session of one identity and scope.
type sharedViewer struct {
	v    *viewer
	refs int
}

// viewerFor returns the started viewer of key, taking a reference on it, or
// nil when there is none.
func (ss *sessions) viewerFor(key string) *viewer {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	sv := ss.viewers[key]
	if sv == nil {
		return nil
	}
	sv.refs++
	return sv.v
}

// shareViewer keeps v, just started, as key's viewer with a reference taken,
// and returns it; when another sign-in of the same identity kept one first,
// that one is returned (with a reference) and the caller ends v.
func (ss *sessions) shareViewer(key string, v *viewer) *viewer {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if sv := ss.viewers[key]; sv != nil {
		sv.refs++
		return sv.v
	}
	ss.viewers[key] = &sharedViewer{v: v, refs: 1}
	return v
}

// unshareLocked drops a reference on key's viewer, ending it with the last.
func (ss *sessions) unshareLocked(key string) {
	sv := ss.viewers[key]
	if sv == nil {
		return
	}
	if sv.refs--; sv.refs <= 0 {
		delete(ss.viewers, key)
		sv.v.end()
	}
}

// unshare is unshareLocked for a reference taken by a sign-in that failed
// before its session started.
func (ss *sessions) unshare(key string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.unshareLocked(key)
}

// signInLimit is a token bucket per client address.
type signInLimit struct {
	allowance float64
	at        time.Time
}

// allowSignIn reports whether the client of r may try to sign in at now, and
// takes one try from its allowance.
func (ss *sessions) allowSignIn(r *http.Request, now time.Time) bool {
	client, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		client = r.RemoteAddr
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	l, ok := ss.signIns[client]
	if !ok {
		if len(ss.signIns) >= maxSignInClients {
			ss.forgetSignInsLocked(now)
		}
		l = &signInLimit{allowance: signInBurst, at: now}
		ss.signIns[client] = l
	}
	l.allowance = min(signInBurst, l.allowance+now.Sub(l.at).Minutes()*signInsPerMinute)
	l.at = now
	if l.allowance < 1 {
		return false
	}
	l.allowance--
	return true
}

// forgetSignInsLocked forgets the addresses whose allowance is full again,
// and every address if none is.
func (ss *sessions) forgetSignInsLocked(now time.Time) {
	for c, l := range ss.signIns {
		if l.allowance+now.Sub(l.at).Minutes()*signInsPerMinute >= signInBurst {
			delete(ss.signIns, c)
		}
	}
	if len(ss.signIns) >= maxSignInClients {
		clear(ss.signIns)
	}
}
