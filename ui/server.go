package ui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options configure a Server.
type Options struct {
	// Config is the user's: every request to the API server is made with it.
	Config *rest.Config
	// Scheme knows Syncs and the built-in kinds.
	Scheme *runtime.Scheme
	// Namespace is the user's namespace (the kubeconfig context's, or -n): the one
	// the UI shows when the user may not list Syncs in every namespace.
	Namespace string
	// AllNamespaces, when false, shows Namespace alone even to a user who may
	// list every namespace.
	AllNamespaces bool
	// User is who the UI acts as, as the API server knows them (tether ui asks
	// it with a SelfSubjectReview): each action is recorded in an Event on the
	// Sync naming them. Empty: "an unknown user".
	User string
	// Render renders a Sync's source for the diff page; nil shows no diff.
	Render Renderer
	// Log receives what the server has to say about itself; never tokens.
	Log logr.Logger
}

// Server serves the UI of one user. Build it with New, then Serve it.
type Server struct {
	opts     Options
	client   client.Client
	cache    cache.Cache
	scope    scope
	sessions *sessions
	live     *broker
	pages    *pages
	now      func() time.Time
	diffs    chan struct{} // a slot per diff computed at once
}

// New builds a Server for the user of opts.Config: it finds out which Syncs the
// user may list (scope.go) and prepares the shared watch on them. It makes no
// request after that until Serve.
func New(ctx context.Context, opts Options) (*Server, error) {
	c, err := client.New(opts.Config, client.Options{Scheme: opts.Scheme})
	if err != nil {
		return nil, fmt.Errorf("creating a client for %s: %w", opts.Config.Host, err)
	}
	sc, err := findScope(ctx, c, opts.Namespace, opts.AllNamespaces)
	if err != nil {
		return nil, err
	}
	ca, err := cache.New(opts.Config, cache.Options{Scheme: opts.Scheme, DefaultNamespaces: sc.cacheNamespaces()})
	if err != nil {
		return nil, fmt.Errorf("creating the watch on Syncs: %w", err)
	}
	p, err := parsePages()
	if err != nil {
		return nil, err
	}
	return &Server{
		opts: opts, client: c, cache: ca, scope: sc,
		sessions: newSessions(), live: newBroker(), pages: p, now: time.Now,
		diffs: make(chan struct{}, diffSlots),
	}, nil
}

// LoginURL is the URL to open for the server listening on addr: it carries the
// one-time token that starts the browser's session.
func (s *Server) LoginURL(addr net.Addr) string {
	return "http://" + addr.String() + "/login?token=" + s.sessions.loginToken
}

// Serve starts the shared watch on Syncs, waits until it has listed them, and
// serves the UI on l until ctx ends. Requests must name l's address as their Host.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	if err := s.watchSyncs(ctx); err != nil {
		return err
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
	err := srv.Serve(l)
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
	mux.HandleFunc("GET /login", s.login)
	mux.Handle("GET /{$}", s.signedIn(http.HandlerFunc(s.fleet)))
	mux.Handle("GET /syncs/{namespace}/{name}", s.signedIn(http.HandlerFunc(s.syncPage)))
	mux.Handle("GET /syncs/{namespace}/{name}/diff", s.signedIn(http.HandlerFunc(s.diffPage)))
	mux.Handle("POST /syncs/{namespace}/{name}/{action}", s.signedIn(s.checkCSRF(http.HandlerFunc(s.act))))
	mux.Handle("GET /live", s.signedIn(http.HandlerFunc(s.stream)))
	return secured(host, mux)
}
