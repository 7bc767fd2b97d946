package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	gosync "sync"
	"time"
)

// cookieName is the session cookie's name.
const cookieName = "tether_ui_session"

// contentSecurityPolicy lets a page load only the UI's own script and style, talk
// only to the UI, post forms only to it, and be framed by nobody.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// session is one browser's (or, behind a proxy that sends a bearer token, one
// token's): its CSRF token, sent in every form and checked on every POST, and
// the viewer it sees through.
type session struct {
	csrf   string
	viewer *viewer
	// started and seen bound its life in a cluster (sessions.expire).
	started, seen time.Time
	// bearer is the hash of the token of a session a proxy's Authorization
	// header started; "" for one a sign-in started.
	bearer string
	// identity is who the session's user is (MaxSessionsPerUser), "" when
	// not bounded; viewerKey names its shared viewer, "" for one of its own.
	identity, viewerKey string
}

// sessions holds the one-time login token and the sessions it started, or in
// a cluster the sessions of the users signed in.
type sessions struct {
	mu         gosync.Mutex
	loginToken string // "" once used
	byID       map[string]*session
	byBearer   map[string]string // token hash → session ID
	max        int
	// maxPerUser bounds one identity's sessions; held counts them, with the
	// places reserved (pending counts those of every identity).
	maxPerUser int
	held       map[string]int
	pending    int
	// viewers are the viewers shared by the sessions of one identity.
	viewers map[string]*sharedViewer
	// signIns is the sign-in rate limit by client address.
	signIns map[string]*signInLimit
}

func newSessions(maxSessions int) *sessions {
	return newSessionsPerUser(maxSessions, DefaultMaxSessionsPerUser)
}

func newSessionsPerUser(maxSessions, maxPerUser int) *sessions {
	return &sessions{
		loginToken: randomToken(), byID: map[string]*session{}, byBearer: map[string]string{}, max: maxSessions,
		maxPerUser: maxPerUser, held: map[string]int{}, viewers: map[string]*sharedViewer{}, signIns: map[string]*signInLimit{},
	}
}

// randomToken is 32 random bytes, URL-safe. crypto/rand does not fail on the
// platforms Go supports (it panics rather than return short).
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// exchange spends the one-time token: if token is it, it starts a session and
// returns its ID; any later call, or another token, gets "".
func (ss *sessions) exchange(token string, v *viewer) string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.loginToken == "" || subtle.ConstantTimeCompare([]byte(token), []byte(ss.loginToken)) != 1 {
		return ""
	}
	ss.loginToken = ""
	id := randomToken()
	ss.byID[id] = &session{csrf: randomToken(), viewer: v}
	return id
}

// get returns the session id names, nil for none, and marks it seen at now.
func (ss *sessions) get(id string, now time.Time) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	sess := ss.byID[id]
	if sess != nil {
		sess.seen = now
	}
	return sess
}

// login exchanges the token of the URL `tether ui` printed for a session cookie,
// and sends the browser on to the fleet, dropping the token from its address bar.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	id := s.sessions.exchange(r.URL.Query().Get("token"), s.local)
	if id == "" {
		s.refuse(w, r, http.StatusForbidden, "This sign-in link is wrong or was used already. Run tether ui again for a new one.")
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: id, Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode,
	})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

type sessionKey struct{}

// signedIn lets through requests of a session, with it in their context.
func (s *Server) signedIn(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(cookieName)
		var sess *session
		if err == nil {
			sess = s.sessions.get(c.Value, s.now())
		}
		if sess == nil && s.opts.InCluster {
			if token, ok := bearerToken(r); ok {
				var code int
				var msg string
				if sess, code, msg = s.bearerSession(r.Context(), token); sess == nil {
					s.refuse(w, r, code, msg)
					return
				}
			}
		}
		if sess == nil && s.opts.InCluster {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		if sess == nil {
			s.refuse(w, r, http.StatusUnauthorized, "Not signed in. Open the link tether ui printed.")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess)))
	})
}

func sessionOf(r *http.Request) *session {
	sess, _ := r.Context().Value(sessionKey{}).(*session)
	return sess
}

// viewerOf is the viewer of the request's session: who the UI acts as.
func viewerOf(r *http.Request) *viewer { return sessionOf(r).viewer }

// csrfField is the form field that carries the session's CSRF token.
const csrfField = "csrf"

// checkCSRF lets through a POST whose form carries the session's CSRF token.
func (s *Server) checkCSRF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 4096)
		sess := sessionOf(r)
		got := r.PostFormValue(csrfField)
		if sess == nil || got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(sess.csrf)) != 1 {
			s.refuse(w, r, http.StatusForbidden, "Refused: the form's CSRF token is missing or wrong. Reload the page and try again.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// secured sets the headers every response carries and refuses requests for
// another Host than the one the server listens on (a page of another site that
// resolves its name to this address: DNS rebinding). localhost is accepted for
// a server on loopback.
func secured(host string, next http.Handler) http.Handler {
	allowed := map[string]bool{host: true} // "": any
	if h, port, err := net.SplitHostPort(host); err == nil && net.ParseIP(h).IsLoopback() {
		allowed[net.JoinHostPort("localhost", port)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if host != "" && !allowed[r.Host] {
			http.Error(w, "unknown host", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}
