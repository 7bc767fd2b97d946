package ui

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// In a cluster (Options.InCluster) the server serves many users. Each signs in
// with a Kubernetes bearer token: in the sign-in form, or in the
// Authorization header a proxy in front sets on every request (an OIDC proxy
// that forwards the user's ID token). A SelfSubjectReview made with the token
// verifies it and names the user. The token stays in the server's memory, in
// the viewer of the session (its rest.Config), keyed by a random session ID
// that the browser holds in a Secure, HttpOnly, SameSite=Strict cookie, or for
// a proxy's header by the token's SHA-256; it is never logged, never written
// into a page, and every request to the API server for that user is made with
// it.
//
// Live updates: a watch can only be shared by users who may read the same
// things, so each identity (user, UID, groups and extra, as the API server
// reviews them) has its own viewer with its own watch on the Syncs it may list
// (its cluster-wide list, or a namespace's), started at its first sign-in,
// shared by its other sessions in that scope, and stopped when the last of
// them ends; it acts with the token of the sign-in that started it. Sessions
// are bounded (MaxSessions in all, MaxSessionsPerUser per identity, places
// reserved before any watch starts; session_limits.go), the sign-in form is
// rate-limited per client address, sessions end after sessionIdle without a
// request or sessionMaxAge in all, and a user whose token the API server no
// longer accepts sees its refusals.

// DefaultMaxSessions bounds the sessions of a cluster's server by default.
const DefaultMaxSessions = 100

const (
	sessionIdle   = 30 * time.Minute
	sessionMaxAge = 8 * time.Hour
	// signInTimeout bounds the SelfSubjectReview and the first list of Syncs.
	signInTimeout = time.Minute
	// signInCookie carries the sign-in form's own CSRF token (a page of
	// another site must not sign a browser in as someone else).
	signInCookie = "tether_ui_signin"
	// maxSignInBody bounds the sign-in form: a token, a namespace, the CSRF.
	maxSignInBody = 64 << 10
)

// errTooManySessions refuses a sign-in beyond MaxSessions.
var errTooManySessions = errors.New("too many users are signed in; try again later")

// signInPage is the sign-in form of a cluster's server.
type signInPage struct {
	CSRF, Namespace, Message string
}

// signInForm shows the form, with a fresh CSRF token in a cookie and the form.
func (s *Server) signInForm(w http.ResponseWriter, r *http.Request) {
	s.renderSignIn(w, r, http.StatusOK, "", "")
}

// renderSignIn shows the sign-in form with the browser's sign-in token, or a
// new one in a new cookie. A browser keeps its token while it has one: a page's
// live stream, redirected here, or the form opened in a second tab must not
// make the token of a form already shown stale.
func (s *Server) renderSignIn(w http.ResponseWriter, r *http.Request, code int, namespace, msg string) {
	var token string
	if c, err := r.Cookie(signInCookie); err == nil && isToken(c.Value) {
		token = c.Value
	} else {
		token = randomToken()
		http.SetCookie(w, &http.Cookie{Name: signInCookie, Value: token, Path: "/login", HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	}
	s.render(w, code, "signin", signInPage{CSRF: token, Namespace: namespace, Message: msg})
}

// isToken is whether v has the shape of a randomToken.
func isToken(v string) bool {
	b, err := base64.RawURLEncoding.DecodeString(v)
	return err == nil && len(b) == 32
}

// signIn verifies the form's token and starts a session for its user.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxSignInBody)
	c, err := r.Cookie(signInCookie)
	got := r.PostFormValue(csrfField)
	if err != nil || got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(c.Value)) != 1 {
		s.renderSignIn(w, r, http.StatusForbidden, "", "The form's CSRF token is missing or wrong: sign in from this page.")
		return
	}
	token, namespace := strings.TrimSpace(r.PostFormValue("token")), strings.TrimSpace(r.PostFormValue("namespace"))
	if !s.sessions.allowSignIn(r, s.now()) {
		w.Header().Set("Retry-After", "60")
		s.renderSignIn(w, r, http.StatusTooManyRequests, namespace, errSignInRateLimited.Error())
		return
	}
	if token == "" {
		s.renderSignIn(w, r, http.StatusUnauthorized, namespace, "Give a bearer token.")
		return
	}
	sess, code, msg := s.startSession(r.Context(), token, namespace, "")
	if sess == "" {
		s.renderSignIn(w, r, code, namespace, msg)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: signInCookie, Value: "", Path: "/login", MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: sess, Path: "/", HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// signOut ends the request's session and its watch.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) { s.endSession(w, r) }

// endSession ends the request's session (a sign-in's or a proxy token's) and
// its watch, and sends the browser to the sign-in page.
func (s *Server) endSession(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(cookieName); err == nil {
		s.sessions.remove(c.Value)
	}
	if token, ok := bearerToken(r); ok {
		sum := sha256.Sum256([]byte(token))
		s.sessions.removeBearer(hex.EncodeToString(sum[:]))
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// bearerToken is the token of the request's Authorization header, if it
// carries one.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}

// bearerSession is the session of a proxy's bearer token: the one it started
// before, or a new one. On failure it returns nil, the status and why.
func (s *Server) bearerSession(ctx context.Context, token string) (*session, int, string) {
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:])
	if sess := s.sessions.ofBearer(key, s.now()); sess != nil {
		return sess, 0, ""
	}
	id, code, msg := s.startSession(ctx, token, "", key)
	if id == "" {
		return nil, code, msg
	}
	return s.sessions.get(id, s.now()), 0, ""
}

// startSession verifies token with a SelfSubjectReview, reserves a place for
// its user's session (MaxSessions, MaxSessionsPerUser) before any watch
// starts, shares the watch of that identity's other sessions or starts one
// (in namespace when they may not list every namespace; "" is the server's
// Options.Namespace) and returns the new session's ID; bearer is the token's
// hash for a proxy's, "" for a sign-in. On failure it returns "", the status
// to answer and why, never the token.
func (s *Server) startSession(ctx context.Context, token, namespace, bearer string) (string, int, string) {
	ctx, cancel := context.WithTimeout(ctx, signInTimeout)
	defer cancel()
	cfg := rest.CopyConfig(s.opts.Config)
	cfg.BearerToken = token
	user, identity, err := reviewSelf(ctx, cfg, s)
	switch {
	case apierrors.IsUnauthorized(err):
		return "", http.StatusUnauthorized, "The API server did not accept this token."
	case err != nil:
		return "", http.StatusBadGateway, "Asking the API server who this token is: " + err.Error()
	}
	res, err := s.sessions.reserve(identity)
	if err != nil {
		return "", http.StatusServiceUnavailable, err.Error()
	}
	defer res.release()
	if namespace == "" {
		namespace = s.opts.Namespace
	}
	key := identity + "\x00" + namespace
	v := s.sessions.viewerFor(key)
	if v == nil {
		if v, err = newViewer(ctx, cfg, s.opts.Scheme, namespace, s.opts.AllNamespaces, user); err != nil {
			return "", http.StatusForbidden, err.Error()
		}
		if err := v.start(s.run, ctx, s.opts.Log); err != nil {
			return "", http.StatusBadGateway, err.Error()
		}
		if shared := s.sessions.shareViewer(key, v); shared != v {
			v.end() // another sign-in of this identity started one first
			v = shared
		}
	}
	return res.attach(v, key, bearer, s.now()), 0, ""
}

// reviewSelf asks the API server who cfg's token is (a SelfSubjectReview):
// the user's name, and their identity (name, UID and groups), which two
// tokens share only if the API server authorizes them alike.
func reviewSelf(ctx context.Context, cfg *rest.Config, s *Server) (string, string, error) {
	c, err := client.New(cfg, client.Options{Scheme: s.opts.Scheme})
	if err != nil {
		return "", "", err
	}
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return "", "", err
	}
	u := review.Status.UserInfo
	groups := slices.Sorted(slices.Values(u.Groups))
	extra, _ := json.Marshal(u.Extra) // maps marshal in key order
	identity := strings.Join([]string{u.Username, u.UID, strings.Join(groups, "\x01"), string(extra)}, "\x00")
	return u.Username, identity, nil
}

// add starts a session on v, a viewer of its own, for a proxy's token of hash
// bearer ("" for a sign-in), unless MaxSessions are open.
func (ss *sessions) add(v *viewer, bearer string, now time.Time) (string, error) {
	r, err := ss.reserve("")
	if err != nil {
		return "", err
	}
	return r.attach(v, "", bearer, now), nil
}

// ofBearer is the session a proxy's token of hash key started, marked seen.
func (ss *sessions) ofBearer(key string, now time.Time) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	sess := ss.byID[ss.byBearer[key]]
	if sess != nil {
		sess.seen = now
	}
	return sess
}

// removeBearer ends the session of a proxy's token of hash key, if any.
func (ss *sessions) removeBearer(key string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if id, ok := ss.byBearer[key]; ok {
		ss.dropLocked(id)
	}
}

// remove ends session id and its watch.
func (ss *sessions) remove(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.dropLocked(id)
}

func (ss *sessions) dropLocked(id string) {
	sess, ok := ss.byID[id]
	if !ok {
		return
	}
	delete(ss.byID, id)
	if sess.bearer != "" && ss.byBearer[sess.bearer] == id {
		delete(ss.byBearer, sess.bearer)
	}
	if sess.identity != "" {
		ss.held[sess.identity]--
		if ss.held[sess.identity] <= 0 {
			delete(ss.held, sess.identity)
		}
	}
	switch {
	case sess.viewerKey != "":
		ss.unshareLocked(sess.viewerKey)
	case sess.viewer != nil:
		sess.viewer.end()
	}
}

// expire ends, every minute until ctx ends, the sessions idle for
// sessionIdle or older than sessionMaxAge, and all of them when ctx ends.
func (ss *sessions) expire(ctx context.Context, now func() time.Time) {
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			ss.mu.Lock()
			for id := range ss.byID {
				ss.dropLocked(id)
			}
			ss.mu.Unlock()
			return
		case <-tick.C:
			ss.sweep(now())
		}
	}
}

// sweep ends the sessions that are over at t.
func (ss *sessions) sweep(t time.Time) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for id, sess := range ss.byID {
		if t.Sub(sess.seen) > sessionIdle || t.Sub(sess.started) > sessionMaxAge {
			ss.dropLocked(id)
		}
	}
}
