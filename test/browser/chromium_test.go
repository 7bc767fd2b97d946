package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"tether.dev/tether/test/harness"
)

var (
	// chromiumPath is the browser TestMain found; noBrowser says why there is none.
	chromiumPath, noBrowser string

	// One Chromium serves the package: each test opens its pages in a browser
	// context of its own (cookies apart), as separate people would.
	browserOnce   gosync.Once
	browserCtx    context.Context
	browserCancel context.CancelFunc = func() {}
	browserErr    error
)

// findChromium is $TETHER_CHROMIUM, else chromium on the PATH, else Debian's.
func findChromium() (string, error) {
	if p := os.Getenv("TETHER_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("TETHER_CHROMIUM: %w", err)
		}
		return p, nil
	}
	for _, name := range []string{"chromium", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no Chromium: TETHER_CHROMIUM is unset and there is no chromium on the PATH (hack/chromium.sh installs Debian's)")
}

// chromiumFlags start it headless and quiet: this machine's network may be
// closed, and without them Chromium would try to reach Google's services.
func chromiumFlags(userDataDir string) []chromedp.ExecAllocatorOption {
	return append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.UserDataDir(userDataDir),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox will not start
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 800),
	)
}

// startBrowser starts the package's Chromium once, with a fresh profile.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	needBrowser(t)
	browserOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tether-chromium-")
		if err != nil {
			browserErr = err
			return
		}
		// The browser outlives the test that starts it; TestMain stops it.
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.WithoutCancel(t.Context()), chromiumFlags(dir)...)
		ctx, cancel := chromedp.NewContext(alloc)
		browserCtx = ctx
		browserCancel = func() { cancel(); cancelAlloc(); _ = os.RemoveAll(dir) }
		version, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.userAgent`))
		browserErr = err
		t.Logf("started %s: %s", chromiumPath, version)
	})
	if browserErr != nil {
		t.Fatalf("starting Chromium %s: %v", chromiumPath, browserErr)
	}
	return browserCtx
}

func stopBrowser() { browserCancel() }

// tab is one page of a browser context of its own.
type tab struct {
	t   *testing.T
	ctx context.Context
}

// newTab opens a tab in a fresh browser context (no cookies of other tests),
// which records, before any script of a page runs, every Content-Security-Policy
// violation in window.__violations: a hostile value that became markup shows up
// there even when the policy blocks it.
func newTab(t *testing.T) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(startBrowser(t), chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	tb := &tab{t: t, ctx: ctx}
	tb.do(chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		_, err := cdp.Call(ctx, target, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: recordViolations})
		return err
	}))
	return tb
}

const recordViolations = `window.__violations = [];
document.addEventListener("securitypolicyviolation", function (e) { window.__violations.push(e.violatedDirective + " " + e.sample); });`

// in is the tab, failing subtest t rather than the test that opened it.
func (tb *tab) in(t *testing.T) *tab { return &tab{t: t, ctx: tb.ctx} }

// do runs actions, failing the test on an error.
func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, actions...); err != nil {
		tb.t.Fatal(err)
	}
}

// open navigates to url and waits for its document to load.
func (tb *tab) open(url string) {
	tb.t.Helper()
	tb.do(chromedp.Navigate(url))
}

// click clicks the element selector finds, waits for the page it leads to, and
// returns that page's HTTP status.
func (tb *tab) click(selector string) int64 {
	tb.t.Helper()
	resp, err := chromedp.RunResponse(tb.ctx, chromedp.Click(chromedp.CSS(selector)))
	if err != nil {
		tb.t.Fatalf("clicking %s: %v", selector, err)
	}
	return resp.Status
}

// press focuses the element selector finds and presses Enter on it, as a person
// without a mouse would, waits for the page it leads to, and returns that page's
// HTTP status.
func (tb *tab) press(selector string) int64 {
	tb.t.Helper()
	resp, err := chromedp.RunResponse(tb.ctx, chromedp.Focus(chromedp.CSS(selector)), chromedp.KeyEvent(kb.Enter))
	if err != nil {
		tb.t.Fatalf("pressing Enter on %s: %v", selector, err)
	}
	return resp.Status
}

// eval is the value of a JavaScript expression in the page.
func eval[T any](tb *tab, expression string) T {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](expression))
	if err != nil {
		tb.t.Fatalf("evaluating %s: %v", expression, err)
	}
	return v
}

// waitFor waits until the JavaScript predicate holds, checking it on every change
// of the page's DOM (the live stream's updates are DOM changes), and fails the
// test with what the page says when it does not within waitLong.
func (tb *tab) waitFor(what, predicate string) {
	tb.t.Helper()
	_, err := chromedp.Run(tb.ctx, chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(waitLong)))
	if err != nil {
		tb.t.Fatalf("waiting until %s (%s): %v\npage text:\n%s", what, predicate, err, eval[string](tb, `document.body.innerText`))
	}
}

// text is the text a person reads in the element selector finds ("" if none).
func (tb *tab) text(selector string) string {
	tb.t.Helper()
	return eval[string](tb, fmt.Sprintf(`(function (el) { return el ? el.textContent : ""; })(document.querySelector(%s))`, jsString(selector)))
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`).Replace(s) + "'"
}

// screenshot saves the page, width pixels wide and as tall as its content, as
// name.png in the screenshot directory, and logs where.
func (tb *tab) screenshot(name string, width int64) {
	tb.t.Helper()
	tb.do(chromedp.EmulateViewport(width, 600))
	tb.screenshotOf(name, width, eval[int64](tb, `Math.ceil(document.documentElement.scrollHeight)`))
}

// screenshotOf saves the top width×height pixels of the page as name.png.
func (tb *tab) screenshotOf(name string, width, height int64) {
	tb.t.Helper()
	tb.do(chromedp.EmulateViewport(width, height))
	png, err := chromedp.Run(tb.ctx, chromedp.CaptureScreenshot())
	harness.Must(tb.t, err)
	path := filepath.Join(screenshotDir(tb.t), name+".png")
	harness.Must(tb.t, os.WriteFile(path, png, 0o644))
	tb.t.Logf("screenshot %s", path)
	tb.do(chromedp.EmulateViewport(1280, 800))
}

// darkScheme makes the page's prefers-color-scheme dark (or back to the default).
func (tb *tab) darkScheme(dark bool) {
	tb.t.Helper()
	params := emulation.SetEmulatedMediaParams{}
	if dark {
		params.Features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}
	}
	tb.do(chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		_, err := cdp.Call(ctx, target, emulation.SetEmulatedMedia, params)
		return err
	}))
}

// screenshotDir is $TETHER_UI_SCREENSHOTS (make test-ui sets a git-ignored one),
// else a directory of the test's own.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("TETHER_UI_SCREENSHOTS")
	if dir == "" {
		return t.TempDir()
	}
	harness.Must(t, os.MkdirAll(dir, 0o755))
	return dir
}

// noScriptRan fails the test if anything the page shows became markup: an element
// a hostile value would make, the flag its script would set, or a violation of the
// Content-Security-Policy (which blocks inline script, so a flag alone could not
// tell).
func (tb *tab) noScriptRan() {
	tb.t.Helper()
	if n := eval[int](tb, `document.querySelectorAll('img, iframe, script:not([src]), [onerror], [onload], [onclick]').length`); n != 0 {
		tb.t.Errorf("the page holds %d elements made from hostile text:\n%s", n, eval[string](tb, `document.body.innerHTML`))
	}
	if pwned := eval[bool](tb, `window.__pwned !== undefined`); pwned {
		tb.t.Errorf("a hostile script ran: window.__pwned = %v", eval[string](tb, `String(window.__pwned)`))
	}
	if v := eval[[]string](tb, `window.__violations || []`); len(v) != 0 {
		tb.t.Errorf("Content-Security-Policy violations (hostile markup tried to run): %q", v)
	}
}

// elapsed is for logs: how long something took.
func elapsed(since time.Time) string { return time.Since(since).Round(10 * time.Millisecond).String() }
