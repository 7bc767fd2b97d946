package ui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

func TestSignInAndTheHeadersEveryAnswerCarries(t *testing.T) {
	admin(t)
	cfg := controlplane.Shared(t).Config()
	srv, err := New(t.Context(), Options{Config: cfg, Scheme: testScheme(t), Namespace: "default", AllNamespaces: true})
	harness.Must(t, err)
	login := "/login?token=" + srv.sessions.loginToken
	h := srv.handler("127.0.0.1:9000")
	serve := func(method, target, host, cookie string) *http.Response {
		req, err := http.NewRequestWithContext(t.Context(), method, target, nil)
		harness.Must(t, err)
		req.Host = host
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: cookieName, Value: cookie})
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Result()
	}

	t.Run("without a session a page is refused", func(t *testing.T) {
		if resp := serve("GET", "/", "127.0.0.1:9000", ""); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET / without a cookie: %d, want 401", resp.StatusCode)
		}
		if resp := serve("GET", "/", "127.0.0.1:9000", "made-up"); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET / with a made-up cookie: %d, want 401", resp.StatusCode)
		}
	})
	t.Run("another Host is refused, even with the token", func(t *testing.T) {
		if resp := serve("GET", login, "attacker.example:9000", ""); resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("GET with Host attacker.example: %d, want 421", resp.StatusCode)
		}
	})
	var cookie *http.Cookie
	t.Run("the token starts an HttpOnly SameSite=Strict session, once", func(t *testing.T) {
		resp := serve("GET", login, "localhost:9000", "")
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
			t.Fatalf("GET %s: %d to %q, want 303 to /", "/login", resp.StatusCode, resp.Header.Get("Location"))
		}
		cookies := resp.Cookies()
		if len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode || cookies[0].Name != cookieName {
			t.Fatalf("cookies %+v, want one HttpOnly SameSite=Strict session", cookies)
		}
		cookie = cookies[0]
		if again := serve("GET", login, "127.0.0.1:9000", ""); again.StatusCode != http.StatusForbidden || len(again.Cookies()) != 0 {
			t.Errorf("the token used twice: %d with cookies %v, want 403 and none", again.StatusCode, again.Cookies())
		}
	})
	t.Run("every answer carries a strict Content-Security-Policy", func(t *testing.T) {
		for _, target := range []string{"/static/ui.css", login, "/"} {
			resp := serve("GET", target, "127.0.0.1:9000", cookie.Value)
			csp := resp.Header.Get("Content-Security-Policy")
			if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
				t.Errorf("GET %s: Content-Security-Policy %q", target, csp)
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Referrer-Policy") != "no-referrer" {
				t.Errorf("GET %s: headers %v", target, resp.Header)
			}
		}
	})
	t.Run("the assets are embedded and the pages load no inline script", func(t *testing.T) {
		if resp := serve("GET", "/static/ui.js", "127.0.0.1:9000", ""); resp.StatusCode != http.StatusOK {
			t.Errorf("GET /static/ui.js: %d", resp.StatusCode)
		}
		page, err := io.ReadAll(serve("GET", "/", "127.0.0.1:9000", cookie.Value).Body)
		harness.Must(t, err)
		if n := strings.Count(string(page), "<script"); n != 1 || !strings.Contains(string(page), `<script src="/static/ui.js" defer></script>`) {
			t.Errorf("the fleet page has %d scripts, want the one embedded:\n%s", n, page)
		}
		if resp := serve("GET", "/static/", "127.0.0.1:9000", ""); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /static/: %d, want 404 (no listing)", resp.StatusCode)
		}
	})
}
