package browser

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"tether.dev/tether/test/controlplane"
)

// TestTheSignInFormRefusesAWrongToken opens the sign-in form of `tether ui
// --in-cluster` (the server many users share, which has no credentials of its
// own), which opens no live stream (there is no session to stream for), types
// a token the API server does not accept, and reads the API server's refusal
// above the form, shown again. Both pages pass the accessibility checks.
func TestTheSignInFormRefusesAWrongToken(t *testing.T) {
	needBrowser(t)
	url := startUI(t, controlplane.Shared(t).KubeconfigPath(), "--in-cluster")
	if !strings.HasSuffix(url, "/login") {
		t.Fatalf("tether ui --in-cluster printed %q, want its sign-in form", url)
	}
	// Its cookies are Secure, which Chromium keeps over plain http for
	// localhost, not for 127.0.0.1.
	tb := newTab(t)
	tb.open(strings.Replace(url, "//127.0.0.1:", "//localhost:", 1))
	if got := tb.text("h1"); got != "Sign in" {
		t.Fatalf("the sign-in page's heading is %q, want Sign in", got)
	}
	if eval[bool](tb, `document.getElementById('live') !== null`) {
		t.Error("the sign-in form has the live line: its script opens a stream there is no session for")
	}
	tb.accessible("the sign-in form")

	tb.do(chromedp.SendKeys(`#token`, "not-a-token-the-api-server-knows"))
	if got := tb.click(`form.signin button[type=submit]`); got != 401 {
		t.Errorf("signing in with a wrong token answered %d, want 401", got)
	}
	if got := tb.text(`.message[role=alert]`); !strings.Contains(got, "token") || strings.Contains(got, "CSRF") {
		t.Errorf("the form is shown again with %q, want the API server's refusal of the token:\n%s", got, eval[string](tb, `document.body.innerText`))
	}
	tb.accessible("the sign-in form with a refusal")
	tb.screenshot("signin-refused", 1100)
}
