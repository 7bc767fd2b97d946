package browser

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// accessible checks the page the tab shows, named what, in the light and in the
// dark colour scheme, each a subtest of its own: axe-core's rules (axeViolations)
// and our own checks (accessibilityProblems). One line per page a test opens:
//
//	tb.accessible("the Sync's page")
//
// The page is left in the light scheme.
func (tb *tab) accessible(what string) {
	tb.t.Helper()
	for _, scheme := range []struct {
		name string
		dark bool
	}{{"light", false}, {"dark", true}} {
		tb.t.Run(what+" is accessible, "+scheme.name, func(t *testing.T) {
			tb := tb.in(t)
			tb.darkScheme(scheme.dark)
			defer tb.darkScheme(false)
			if problems := eval[[]string](tb, accessibilityProblems); len(problems) > 0 {
				t.Errorf("%d accessibility problems:\n%s", len(problems), strings.Join(problems, "\n"))
			}
			tb.axe()
		})
	}
}

// TestAxeCoreFindsWhatAPageGetsWrong shows that the check is not empty: on a page
// under the UI's Content-Security-Policy with an image without a text, a link
// without a name and no language, axe-core (injected as on every page of the UI)
// reports each as serious or critical, and nothing it does violates the policy
// (which is in force: an inline style the page adds is reported).
func TestAxeCoreFindsWhatAPageGetsWrong(t *testing.T) {
	needBrowser(t)
	tb := newTab(t)
	tb.open("data:text/html," + url.PathEscape(brokenPage))
	found := map[string]string{}
	for _, v := range tb.axeViolations() {
		t.Logf("%s", v)
		found[v.ID] = v.Impact
	}
	for _, rule := range []string{"image-alt", "link-name", "html-has-lang"} {
		if impact := found[rule]; impact != "serious" && impact != "critical" {
			t.Errorf("axe-core reports %s as %q, want serious or critical", rule, impact)
		}
	}
	// The policy was in force while axe-core ran clean of it: the page's own
	// inline style is refused and reported.
	eval[bool](tb, `document.head.appendChild(document.createElement("style")).textContent = "p { color: red; }", true`)
	tb.waitFor("the inline style is reported", `window.__violations.some(v => v.startsWith("style-src"))`)
}

// brokenPage is a page of three faults, under the UI's policy.
const brokenPage = `<!doctype html><html><head>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'">
<title>Broken</title></head>
<body><main><h1>Broken</h1><p><img> <a href="/elsewhere"></a></p></main></body></html>`

// axeTags are the rules axe runs: WCAG 2.0 and 2.1, levels A and AA, and its
// best practices.
var axeTags = []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"}

// axeViolation is one rule axe-core found broken, with the nodes that break it.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"` // minor, moderate, serious or critical
	Help   string `json:"help"`
	URL    string `json:"helpUrl"`
	Nodes  []struct {
		Target  string `json:"target"`
		Summary string `json:"summary"`
	} `json:"nodes"`
}

func (v axeViolation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s <%s>", v.ID, v.Impact, v.Help, v.URL)
	for _, n := range v.Nodes {
		fmt.Fprintf(&b, "\n  %s:\n    %s", n.Target, strings.ReplaceAll(n.Summary, "\n", "\n    "))
	}
	return b.String()
}

// axeRun runs axe-core on the whole document and returns how many rules passed
// and its violations, each node by its selector and axe's summary of what to fix
// (the first ten nodes).
var axeRun = fmt.Sprintf(`axe.run(document, {runOnly: {type: "tag", values: %s}, resultTypes: ["violations"]}).then(function (r) {
  const node = n => ({target: n.target.join(" "), summary: n.failureSummary || ""});
  const violation = v => ({id: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl, nodes: v.nodes.slice(0, 10).map(node)});
  return JSON.stringify({passed: r.passes.length, violations: r.violations.map(violation)});
})`, mustJSON(axeTags))

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// axe runs axe-core on the page (axeViolations) and fails the test on every
// serious or critical violation; moderate and minor ones are logged. Without
// axe-core (noAxe) it skips the test, saying why.
func (tb *tab) axe() {
	tb.t.Helper()
	for _, v := range tb.axeViolations() {
		if v.serious() {
			tb.t.Errorf("axe-core: %s", v)
		} else {
			tb.t.Logf("axe-core: %s", v)
		}
	}
}

func (v axeViolation) serious() bool { return v.Impact == "serious" || v.Impact == "critical" }

// axeViolations injects axe-core into the page over the DevTools protocol
// (Runtime.evaluate is not the page's script: its Content-Security-Policy does
// not apply, and none of it must be reported violated), runs axeRun, and
// returns what it found.
func (tb *tab) axeViolations() []axeViolation {
	tb.t.Helper()
	if noAxe != "" {
		tb.t.Skipf("axe-core is not installed: %s", noAxe)
	}
	source, err := axeSource()
	if err != nil {
		tb.t.Fatal(err)
	}
	if !eval[bool](tb, `typeof axe === "object"`) {
		if _, err := chromedp.Run(tb.ctx, chromedp.Evaluate[chromedp.Void](source)); err != nil {
			tb.t.Fatalf("injecting axe-core %s: %v", axePath, err)
		}
	}
	start := time.Now()
	out, err := chromedp.Run(tb.ctx, chromedp.Evaluate[string](axeRun, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("running axe-core: %v", err)
	}
	var result struct {
		Passed     int            `json:"passed"`
		Violations []axeViolation `json:"violations"`
	}
	if err := json.Unmarshal([]byte(out), &result); err != nil {
		tb.t.Fatalf("reading axe-core's result %q: %v", out, err)
	}
	tb.t.Logf("axe-core %s ran in %s: %d rules passed, %d violated", eval[string](tb, `axe.version`), elapsed(start), result.Passed, len(result.Violations))
	if csp := eval[[]string](tb, `window.__violations || []`); len(csp) != 0 {
		tb.t.Errorf("Content-Security-Policy violations while axe-core ran: %q", csp)
	}
	return result.Violations
}

var (
	// axePath is axe-core's axe.min.js TestMain found; noAxe says why there is none.
	axePath, noAxe string

	axeSource = gosync.OnceValues(func() (string, error) {
		b, err := os.ReadFile(axePath)
		return string(b), err
	})
)

// findAxe is $TETHER_AXE_CORE, else the axe.min.js hack/axe.sh installs into the
// module's .tools/axe-core (make test and make test-ui run it).
func findAxe() (string, error) {
	path := os.Getenv("TETHER_AXE_CORE")
	if path == "" {
		dir, err := os.Getwd()
		if err != nil {
			return "", err
		}
		for ; !exists(filepath.Join(dir, "go.mod")); dir = filepath.Dir(dir) {
			if dir == filepath.Dir(dir) {
				return "", errors.New("no go.mod above the working directory, and TETHER_AXE_CORE is unset")
			}
		}
		path = filepath.Join(dir, ".tools", "axe-core", "axe.min.js")
	}
	if !exists(path) {
		return "", fmt.Errorf("no %s: `make axe-core` (hack/axe.sh) installs it, or set TETHER_AXE_CORE to an axe.min.js", path)
	}
	return path, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// accessibilityProblems are checks of our own that axe-core does not make, run
// in the page, each problem one line:
//
//   - 1.4.3 contrast: every element with text of its own has a contrast of at
//     least 4.5:1 with the background it is drawn on (3:1 for large text), the
//     colours as the browser computed them, in the scheme the page is in (axe
//     leaves text over some backgrounds to a person to judge: "incomplete");
//   - 1.1.1 images: every svg is aria-hidden (icons beside words) or has a title
//     (axe checks only those whose role is img);
//   - 1.3.1 one h1 (axe asks for at least one), and 4.1.1 no id twice (axe
//     dropped the rule with WCAG 2.2).
const accessibilityProblems = `(function () {
  const problems = [];
  function rgba(s) {
    let m = s.match(/^rgba?\(([^)]*)\)$/);
    if (m) {
      const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
      return [p[0] / 255, p[1] / 255, p[2] / 255, p.length > 3 ? p[3] : 1];
    }
    m = s.match(/^color\(srgb ([^)]*)\)$/);
    if (m) {
      const p = m[1].split(/[\s\/]+/).filter(Boolean).map(Number);
      return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    }
    return null;
  }
  function luminance(c) {
    const f = v => v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  }
  function background(el) {
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0.5) { return c; }
    }
    return matchMedia("(prefers-color-scheme: dark)").matches ? [0, 0, 0, 1] : [1, 1, 1, 1];
  }
  function describe(el) {
    return el.tagName.toLowerCase() + (el.className && typeof el.className === "string" ? "." + el.className.split(" ").join(".") : "") +
      ' "' + el.textContent.trim().slice(0, 40) + '"';
  }
  const all = Array.from(document.body.querySelectorAll("*")).slice(0, 4000);
  let contrastChecked = 0;
  for (const el of all) {
    if (el.closest("svg, [hidden], script, style")) { continue; }
    const own = Array.from(el.childNodes).some(n => n.nodeType === Node.TEXT_NODE && n.textContent.trim() !== "");
    if (!own) { continue; }
    const st = getComputedStyle(el);
    if (st.display === "none" || st.visibility === "hidden") { continue; }
    const fg = rgba(st.color), bg = background(el);
    if (!fg) { problems.push("contrast: no colour read for " + describe(el) + ": " + st.color); continue; }
    const l1 = luminance(fg), l2 = luminance(bg);
    const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    const size = parseFloat(st.fontSize), bold = parseInt(st.fontWeight, 10) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    contrastChecked++;
    if (ratio < need) { problems.push("contrast " + ratio.toFixed(2) + " < " + need + ": " + describe(el) + " (" + st.color + " on " + JSON.stringify(bg) + ")"); }
  }
  if (contrastChecked === 0) { problems.push("contrast: no text checked"); }
  for (const svg of document.querySelectorAll("svg")) {
    if (svg.getAttribute("aria-hidden") !== "true" && !svg.querySelector("title")) { problems.push("image: an svg neither aria-hidden nor titled"); }
  }
  const h1 = document.querySelectorAll("h1").length;
  if (h1 !== 1) { problems.push("headings: " + h1 + " h1, want 1"); }
  const seen = new Set();
  for (const el of document.querySelectorAll("[id]")) {
    if (seen.has(el.id)) { problems.push("id twice: " + el.id); }
    seen.add(el.id);
  }
  return problems;
})()`
