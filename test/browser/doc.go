// Package browser tests Tether's web UI in a real browser: headless Chromium
// (Debian's package, installed by hack/chromium.sh) driven over the DevTools
// protocol by chromedp, against the real control plane (test/controlplane), the
// agent and `tether ui` as users run them (the binary of this tree, built once by
// test/agentbin), and git served by test/gitserver.
//
// What a test asserts is what a person sees: the text of the page, after the page's
// own script has run, and what changes on it while it is open (the live stream).
// Each page is saved as a PNG screenshot into $TETHER_UI_SCREENSHOTS (a temporary
// directory when unset); docs/ui.md shows two of them.
//
// `make test` runs the whole set (about half a minute) on a control plane with
// kube-controller-manager, kube-scheduler and kwok; `make test-ui` runs it alone and
// keeps the screenshots. TETHER_UI_REDUCED=1 runs only the tests that need no
// workloads (the fleet with a live drift, hostile text), for a quick run. Without a browser
// (TETHER_CHROMIUM unset and no chromium on the PATH) the tests skip, except under
// CI=true, where they fail.
package browser
