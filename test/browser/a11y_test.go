package browser

import (
	"strings"
)

// accessibilityProblems is a small set of checks of our own, run in the page
// (no axe-core: it would have to be vendored through npm): what WCAG 2.1 AA asks
// that a page of this UI could get wrong, each problem one line.
//
//   - 1.4.3 contrast: every element with text of its own has a contrast of at
//     least 4.5:1 with the background it is drawn on (3:1 for large text), the
//     colours as the browser computed them, in the scheme the page is in;
//   - 4.1.2 name: every link, button, summary and form control has a name a
//     screen reader says (its text, a label, or aria-label); hidden inputs aside;
//   - 1.1.1 images: every svg is aria-hidden (icons beside words) or has a title;
//   - 3.1.1 the page has a language, 2.4.2 a title, 1.3.1 one h1, and 4.1.1 no
//     id twice.
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
  for (const el of document.querySelectorAll("a[href], button, summary, select, textarea, input:not([type=hidden])")) {
    const name = (el.getAttribute("aria-label") || "").trim() || (el.labels && el.labels.length ? el.labels[0].textContent.trim() : "") ||
      (el.tagName === "INPUT" || el.tagName === "SELECT" ? "" : el.textContent.trim());
    if (name === "") { problems.push("name: " + el.outerHTML.slice(0, 100)); }
  }
  for (const svg of document.querySelectorAll("svg")) {
    if (svg.getAttribute("aria-hidden") !== "true" && !svg.querySelector("title")) { problems.push("image: an svg neither aria-hidden nor titled"); }
  }
  if (!document.documentElement.lang) { problems.push("language: <html> has no lang"); }
  if (document.title.trim() === "") { problems.push("title: the page has none"); }
  const h1 = document.querySelectorAll("h1").length;
  if (h1 !== 1) { problems.push("headings: " + h1 + " h1, want 1"); }
  const seen = new Set();
  for (const el of document.querySelectorAll("[id]")) {
    if (seen.has(el.id)) { problems.push("id twice: " + el.id); }
    seen.add(el.id);
  }
  return problems;
})()`

// accessible fails the test with each problem accessibilityProblems finds on
// the page the tab shows, named what.
func (tb *tab) accessible(what string) {
	tb.t.Helper()
	if problems := eval[[]string](tb, accessibilityProblems); len(problems) > 0 {
		tb.t.Errorf("%s: %d accessibility problems:\n%s", what, len(problems), strings.Join(problems, "\n"))
	}
}
