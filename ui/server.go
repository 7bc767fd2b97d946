package ui

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// Options configure a Server.
type Options struct {
	// Config is the user's: every request to the API server is made with it.
	// In a cluster (InCluster) it names the API server only (its address and
	// CA): each request is made with the token of the user who signed in, and
	// any credentials Config holds are never used.
	Config *rest.Config
	// Scheme knows Syncs and the built-in kinds.
	Scheme *runtime.Scheme
	// Namespace is the user's namespace (the kubeconfig context's, or -n): the one
	// the UI shows when the user may not list Syncs in every namespace. In a
	// cluster, the namespace shown to a user who may not list every namespace
	// and names none when signing in.
	Namespace string
	// AllNamespaces, when false, shows Namespace alone even to a user who may
	// list every namespace.
	AllNamespaces bool
	// User is who the UI acts as, as the API server knows them (tether ui asks
	// it with a SelfSubjectReview): each action is recorded in an Event on the
	// Sync naming them. Empty: "an unknown user". In a cluster each user's name
	// comes from their own SelfSubjectReview.
	User string
	// InCluster serves many users (deploy/ui): each signs in with a Kubernetes
	// bearer token, in the sign-in form or in an Authorization header set by a
	// proxy in front (OIDC), which a SelfSubjectReview verifies; every request
	// is made with that token; cookies are Secure. See cluster.go.
	InCluster bool
	// MaxSessions bounds the users signed in at once in a cluster (each has a
	// watch of their own); 0 means DefaultMaxSessions.
	MaxSessions int
	// MaxSessionsPerUser bounds one identity's sessions, so that one user
	// signing in again and again cannot take every place; 0 means
	// DefaultMaxSessionsPerUser.
	MaxSessionsPerUser int
	// TLSCertFile and TLSKeyFile, when set, serve https with that certificate
	// and key (in a cluster, where cookies are Secure: or put TLS in front).
	TLSCertFile, TLSKeyFile string
	// Render renders a Sync's source for the diff page; nil shows no diff.
	Render Renderer
	// Log receives what the server has to say about itself; never tokens.
	Log logr.Logger
}

// Server serves the UI. Build it with New, then Serve it.
type Server struct {
	opts Options
	// local is the one user of `tether ui`; nil in a cluster, where each
	// session has its own viewer.
	local    *viewer
	sessions *sessions
	pages    *pages
	now      func() time.Time
	diffs    chan struct{} // a slot per diff computed at once
	logs     *logStreams   // the containers' logs followed at once
	// run is Serve's context: the viewers of a cluster's users watch until it
	// ends (or their session does).
	run context.Context
}

// New builds a Server. For one user (not InCluster) it finds out which Syncs
// the user may list (scope.go) and prepares the shared watch on them. It makes
// no request after that until Serve.
func New(ctx context.Context, opts Options) (*Server, error) {
	p, err := parsePages()
	if err != nil {
		return nil, err
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.MaxSessionsPerUser <= 0 {
		opts.MaxSessionsPerUser = DefaultMaxSessionsPerUser
	}
	s := &Server{opts: opts, sessions: newSessionsPerUser(opts.MaxSessions, opts.MaxSessionsPerUser), pages: p, now: time.Now, diffs: make(chan struct{}, diffSlots), logs: newLogStreams()}
	if opts.InCluster {
		s.opts.Config = rest.AnonymousClientConfig(opts.Config)
		return s, nil
	}
	if s.local, err = newViewer(ctx, opts.Config, opts.Scheme, opts.Namespace, opts.AllNamespaces, opts.User); err != nil {
		return nil, err
	}
	return s, nil
}

// LoginURL is the URL to open for the server listening on addr: it carries the
// one-time token that starts the browser's session. In a cluster it is the
// sign-in page.
func (s *Server) LoginURL(addr net.Addr) string {
	scheme := "http://"
	if s.opts.TLSCertFile != "" {
		scheme = "https://"
	}
	if s.opts.InCluster {
		return scheme + addr.String() + "/login"
	}
	return scheme + addr.String() + "/login?token=" + s.sessions.loginToken
}

// Serve starts the shared watch on Syncs (of the one user; in a cluster each
// user's starts when they sign in), waits until it has listed them, and
// serves the UI on l until ctx ends. Requests must name l's address as their
// Host, but in a cluster.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	s.run = ctx
	if s.local != nil {
		if err := s.local.start(ctx, ctx, s.opts.Log); err != nil {
			return err
		}
	} else {
		go s.sessions.expire(ctx, s.now)
	}
	srv := &http.Server{
		Handler:           s.handler(l.Addr().String()),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	var err error
	if s.opts.TLSCertFile != "" {
		err = srv.ServeTLS(l, s.opts.TLSCertFile, s.opts.TLSKeyFile)
	} else {
		err = srv.Serve(l)
	}
	<-stopped
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// handler routes the UI's pages, its actions, its live stream and its assets,
// behind the checks every request passes (session.go).
func (s *Server) handler(host string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /static/", assetHandler())
	if s.opts.InCluster {
		mux.HandleFunc("GET /login", s.signInForm)
		mux.HandleFunc("POST /login", s.signIn)
		mux.Handle("POST /logout", s.signedIn(s.checkCSRF(http.HandlerFunc(s.signOut))))
	} else {
		mux.HandleFunc("GET /login", s.login)
	}
	mux.Handle("GET /{$}", s.signedIn(http.HandlerFunc(s.fleet)))
	mux.Handle("GET /dependencies", s.signedIn(http.HandlerFunc(s.dependencies)))
	mux.Handle("GET /syncs/{namespace}/{name}", s.signedIn(http.HandlerFunc(s.syncPage)))
	mux.Handle("GET /syncs/{namespace}/{name}/graph", s.signedIn(http.HandlerFunc(s.graphPage)))
	mux.Handle("GET /syncs/{namespace}/{name}/object", s.signedIn(http.HandlerFunc(s.objectPage)))
	mux.Handle("GET /syncs/{namespace}/{name}/diff", s.signedIn(http.HandlerFunc(s.diffPage)))
	mux.Handle("GET /syncs/{namespace}/{name}/logs", s.signedIn(http.HandlerFunc(s.logsPage)))
	mux.Handle("GET /syncs/{namespace}/{name}/logs/stream", s.signedIn(http.HandlerFunc(s.logsStream)))
	mux.Handle("GET /syncs/{namespace}/{name}/compare", s.signedIn(http.HandlerFunc(s.comparePage)))
	mux.Handle("POST /syncs/{namespace}/{name}/{action}", s.signedIn(s.checkCSRF(http.HandlerFunc(s.act))))
	mux.Handle("GET /live", s.signedIn(http.HandlerFunc(s.stream)))
	if s.opts.InCluster {
		// Many hosts name it (a Service, an Ingress); a page of another site
		// that resolves its name here (DNS rebinding) gets no session's cookie
		// and no token, so the Host is not checked.
		host = ""
	}
	return secured(host, mux)
}
