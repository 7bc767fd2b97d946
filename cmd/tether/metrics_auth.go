package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// metricsAuthOptions tune how --metrics-secure checks a scraper.
type metricsAuthOptions struct {
	// AllowTTL is how long a token allowed to read a path is trusted without
	// asking the API server again: a scraper every few seconds costs one
	// TokenReview and one SubjectAccessReview per AllowTTL, not per scrape.
	AllowTTL time.Duration
	// DenyTTL is how long a refusal (a token the API server does not know, or
	// an account without the right) is remembered; short, so that a binding
	// just created takes effect soon.
	DenyTTL time.Duration
	// MaxEntries bounds the answers remembered (token, verb, path); past it,
	// expired answers are dropped, then all of them.
	MaxEntries int
	// Timeout bounds each review request to the API server.
	Timeout time.Duration
}

// defaultMetricsAuthOptions are the agent's: close to what controller-runtime's
// filter caches (a minute for tokens), a bound a few scrapers never reach.
func defaultMetricsAuthOptions() metricsAuthOptions {
	return metricsAuthOptions{AllowTTL: time.Minute, DenyTTL: 10 * time.Second, MaxEntries: 256, Timeout: 10 * time.Second}
}

// metricsAuthFilter is the FilterProvider of --metrics-secure. It does what
// controller-runtime's filters.WithAuthenticationAndAuthorization does (the
// scraper's bearer token through a TokenReview, its right to the lowercased HTTP
// method on the non-resource path through a SubjectAccessReview) with the typed
// clients alone: that package links k8s.io/apiserver's delegating authn/authz
// with their CEL, OpenTelemetry and gRPC, about 200 packages and 5 MB of binary
// that every start pages in, for these two requests.
func metricsAuthFilter(opts metricsAuthOptions) func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
	return func(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
		authn, err := authnclient.NewForConfigAndClient(cfg, httpClient)
		if err != nil {
			return nil, fmt.Errorf("metrics authentication client: %w", err)
		}
		authz, err := authzclient.NewForConfigAndClient(cfg, httpClient)
		if err != nil {
			return nil, fmt.Errorf("metrics authorization client: %w", err)
		}
		a := &metricsAuth{opts: opts, tokens: authn.TokenReviews(), access: authz.SubjectAccessReviews(), now: time.Now, answers: map[metricsAuthKey]metricsAnswer{}}
		return func(log logr.Logger, next http.Handler) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				a.serve(log, next, w, req)
			}), nil
		}, nil
	}
}

// metricsAuth checks scrapers and remembers its answers.
type metricsAuth struct {
	opts   metricsAuthOptions
	tokens authnclient.TokenReviewInterface
	access authzclient.SubjectAccessReviewInterface
	now    func() time.Time

	mu      sync.Mutex
	answers map[metricsAuthKey]metricsAnswer
}

// metricsAuthKey identifies a question: the token by its digest (the map never
// holds a token), the verb and the path.
type metricsAuthKey struct {
	token      [sha256.Size]byte
	verb, path string
}

// metricsAnswer is an HTTP status (200: let through, 401, 403) and until when it
// holds; user names the account, for the logs.
type metricsAnswer struct {
	status  int
	user    string
	expires time.Time
}

func (a *metricsAuth) serve(log logr.Logger, next http.Handler, w http.ResponseWriter, req *http.Request) {
	token, ok := bearerToken(req.Header.Get("Authorization"))
	if !ok {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	key := metricsAuthKey{token: sha256.Sum256([]byte(token)), verb: strings.ToLower(req.Method), path: req.URL.Path}
	answer, ok := a.cached(key)
	if !ok {
		var err error
		answer, err = a.review(req.Context(), token, key)
		if err != nil {
			log.Error(err, "Checking a metrics scraper failed")
			http.Error(w, "Checking the scraper failed", http.StatusInternalServerError)
			return
		}
		a.remember(key, answer)
	}
	switch answer.status {
	case http.StatusOK:
		req.Header.Del("Authorization") // the metrics handler has no use for it
		next.ServeHTTP(w, req)
	case http.StatusUnauthorized:
		log.V(4).Info("Metrics scraper not authenticated")
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	default:
		log.V(4).Info("Metrics scraper not authorized", "user", answer.user, "verb", key.verb, "path", key.path)
		http.Error(w, fmt.Sprintf("Authorization denied for user %s", answer.user), http.StatusForbidden)
	}
}

// bearerToken returns the token of an Authorization header "Bearer <token>" (the
// scheme in any case), and false when there is none.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if token == "" || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

// review asks the API server who the token is, then whether that user may do
// key.verb on key.path.
func (a *metricsAuth) review(ctx context.Context, token string, key metricsAuthKey) (metricsAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
	defer cancel()
	tr, err := a.tokens.Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return metricsAnswer{}, fmt.Errorf("TokenReview: %w", err)
	}
	if !tr.Status.Authenticated {
		return a.answer(http.StatusUnauthorized, ""), nil
	}
	u := tr.Status.User
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extraOf(u.Extra),
		NonResourceAttributes: &authzv1.NonResourceAttributes{Verb: key.verb, Path: key.path},
	}}
	got, err := a.access.Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return metricsAnswer{}, fmt.Errorf("SubjectAccessReview for user %s: %w", u.Username, err)
	}
	if !got.Status.Allowed || got.Status.Denied {
		return a.answer(http.StatusForbidden, u.Username), nil
	}
	return a.answer(http.StatusOK, u.Username), nil
}

func (a *metricsAuth) answer(status int, user string) metricsAnswer {
	ttl := a.opts.DenyTTL
	if status == http.StatusOK {
		ttl = a.opts.AllowTTL
	}
	return metricsAnswer{status: status, user: user, expires: a.now().Add(ttl)}
}

func extraOf(in map[string]authnv1.ExtraValue) map[string]authzv1.ExtraValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]authzv1.ExtraValue, len(in))
	for k, v := range in {
		out[k] = authzv1.ExtraValue(v)
	}
	return out
}

func (a *metricsAuth) cached(key metricsAuthKey) (metricsAnswer, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	answer, ok := a.answers[key]
	if !ok || !a.now().Before(answer.expires) {
		return metricsAnswer{}, false
	}
	return answer, true
}

// remember keeps answer for key, within MaxEntries: when full it drops the
// expired answers first, and all of them if none has expired (a flood of
// distinct tokens costs reviews, never memory).
func (a *metricsAuth) remember(key metricsAuthKey, answer metricsAnswer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.answers[key]; !ok && len(a.answers) >= a.opts.MaxEntries {
		now := a.now()
		for k, v := range a.answers {
			if !now.Before(v.expires) {
				delete(a.answers, k)
			}
		}
		if len(a.answers) >= a.opts.MaxEntries {
			clear(a.answers)
		}
	}
	a.answers[key] = answer
}
