package source_test

import (
	"net/http"
	"net/http/httptest"
	gosync "sync"
	"testing"

	"tether.dev/tether/source"
	"tether.dev/tether/test/chartrepo"
)

// TestChartCredentialsFollowARedirectOnlyToTheSameOrigin: two loopback
// servers share the host name 127.0.0.1 on different ports; a redirect from
// the repository to the other must not carry the repository's credentials,
// and one within the repository still does.
func TestChartCredentialsFollowARedirectOnlyToTheSameOrigin(t *testing.T) {
	repo := chartrepo.Start(t, chartrepo.Options{Username: "reader", Password: "s3cret-password"})
	repo.Publish(t, chartrepo.Chart(t, "webapp"), "1.0.0")

	var mu gosync.Mutex
	var elsewhere []string // the Authorization each request to the other port carried
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.Header.Get("Authorization"))
		mu.Unlock()
		http.NotFound(w, r)
	}))
	t.Cleanup(other.Close)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		switch {
		case !ok || user != "reader" || pass != "s3cret-password":
			http.Error(w, "credentials required", http.StatusUnauthorized)
		case r.URL.Path == "/moved/index.yaml":
			http.Redirect(w, r, other.URL+"/index.yaml", http.StatusFound) // same host name, another port
		case r.URL.Path == "/within/index.yaml":
			http.Redirect(w, r, "/served/index.yaml", http.StatusFound) // same origin
		case r.URL.Path == "/served/index.yaml":
			_, _ = w.Write(repo.Index())
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(front.Close)
	src := newSource(t, source.Options{})
	auth := source.Auth{Username: "reader", Password: "s3cret-password"}

	t.Run("a redirect to another port of the same host loses the credentials", func(t *testing.T) {
		_, err := src.FetchChart(t.Context(), source.ChartRequest{Repository: front.URL + "/moved", Name: "webapp", Auth: auth})
		checkChartFailure(t, err, source.ReasonRepositoryNotFound, "HTTP 404")
		mu.Lock()
		defer mu.Unlock()
		if len(elsewhere) == 0 {
			t.Fatal("the redirect was not followed to the other port")
		}
		for _, got := range elsewhere {
			if got != "" {
				t.Errorf("the server on the other port got Authorization %q; want none", got)
			}
		}
	})
	t.Run("a redirect within the repository's origin keeps them", func(t *testing.T) {
		// The index names packages by absolute URL on repo; only the index read is the point here.
		_, err := src.FetchChart(t.Context(), source.ChartRequest{Repository: front.URL + "/within", Name: "nothing-by-this-name", Auth: auth})
		if reason := fetchReason(t, err); reason != source.ReasonChartNotFound {
			t.Errorf("reason = %s, want %s: the index was read with the credentials (error %v)", reason, source.ReasonChartNotFound, err)
		}
	})
}
