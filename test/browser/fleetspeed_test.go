package browser

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
)

// fleetSize is the fleet the issue measured: a thousand Syncs and the three of
// a demo.
const fleetSize = 1003

// fleetBudget is what the UI was built to: the fleet shown within a second.
const fleetBudget = time.Second

// fleetRuns is how many times the page is opened when it is timed
// (TETHER_UI_SPEED=1); the best is held to the budget (the others are the
// machine's other work, logged). Otherwise it is opened once: make test holds
// it to what it shows, which one opening tells.
func fleetRuns() int {
	if os.Getenv("TETHER_UI_SPEED") != "" {
		return 5
	}
	return 1
}

// overBudget reports a page shown later than fleetBudget. Timing belongs to
// its own run on a quiet machine (make test-ui sets TETHER_UI_SPEED=1, and so
// may anyone measuring); in make test, beside every other package's tests on
// two cores, the figures are logged and the page is held to what it shows.
func overBudget(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("TETHER_UI_SPEED") != "" {
		t.Errorf(format, args...)
		return
	}
	t.Logf("(not held to the budget outside TETHER_UI_SPEED=1) "+format, args...)
}

// recordShown marks, in window.__shown, the first frame drawn once the whole
// document is parsed and its deferred script run: two animation frames after
// DOMContentLoaded, the first to lay the page out and paint it, the second to
// know it was. The test injects it; no script of the page's own measures.
const recordShown = `window.__shown = 0;
document.addEventListener("DOMContentLoaded", function () {
  requestAnimationFrame(function () { requestAnimationFrame(function () { window.__shown = performance.now(); }); });
});`

// pageTiming is one opening of the fleet page, in milliseconds from the start
// of the navigation, with the bytes of its document.
type pageTiming struct {
	FirstByte, LastByte, Parsed, Shown float64
	Bytes                              int64
	Rows                               int
}

func (p pageTiming) String() string {
	return fmt.Sprintf("shown %4.0f ms (server %4.0f ms, transfer %3.0f ms, parse+script %4.0f ms, layout+paint %4.0f ms), %d rows, %d KB",
		p.Shown, p.FirstByte, p.LastByte-p.FirstByte, p.Parsed-p.LastByte, p.Shown-p.Parsed, p.Rows, p.Bytes/1024)
}

// TestTheFleetOf1003SyncsIsShownWithinASecond opens the fleet page of 1,003
// Syncs (their statuses written as the agent would: some OutOfSync, Degraded,
// Progressing, failing, suspended) several times in Chromium, and measures, in
// the browser, how long each took from the navigation to the first frame drawn
// with every Sync on it, split into the server's answer, the transfer, the
// parse and the layout, as a table and as tiles (?view=tiles). The best run
// of each must be within a second.
func TestTheFleetOf1003SyncsIsShownWithinASecond(t *testing.T) {
	needBrowser(t)
	c := newClient(t)
	created := time.Now()
	namespaces := make([]string, 10)
	for i := range namespaces {
		namespaces[i] = newNamespace(t, c, "team-"+strconv.Itoa(i))
	}
	createFleet(t, c, namespaces, fleetSize)
	t.Logf("created %d Syncs with their statuses in %s", fleetSize, elapsed(created))

	tb := signIn(t, startUI(t, controlplane.Shared(t).KubeconfigPath()))
	fleet := base(t, tb.url()) + "/"
	bytes := map[string]int64{}
	for _, view := range []struct{ name, query, selector, screenshot string }{
		{"table", "", "tr[data-key]", "fleet-1003"},
		{"tiles", "?view=tiles", "a.tile[data-key]", "fleet-tiles-1003"},
	} {
		t.Run(view.name, func(t *testing.T) {
			tb := tb.in(t)
			best := timePage(tb, fleet+view.query, view.selector, fleetSize)
			if shown := time.Duration(best.Shown * float64(time.Millisecond)); shown > fleetBudget {
				overBudget(t, "the fleet of %d Syncs (%s) was shown in %s at best of %d runs, want within %s", fleetSize, view.name, shown, fleetRuns(), fleetBudget)
			}
			bytes[view.name] = best.Bytes
			if os.Getenv("TETHER_UI_SCREENSHOTS") != "" {
				tb.screenshotOf(view.screenshot, 1280, 900)
			}
		})
	}
	// A tile says less than a row (no subject, no message, no time): its page
	// must weigh less, whatever the fleet.
	if bytes["tiles"] >= bytes["table"] {
		t.Errorf("the tiles of %d Syncs weigh %d bytes, the table %d: want the tiles lighter", fleetSize, bytes["tiles"], bytes["table"])
	}
	t.Logf("the fleet of %d Syncs weighs %d bytes as a table, %d as tiles", fleetSize, bytes["table"], bytes["tiles"])
}

// timePage opens url fleetRuns() times, each timed in the browser and logged,
// checks that each showed at least want elements matching selector, and
// returns the quickest run.
func timePage(tb *tab, url, selector string, want int) pageTiming {
	tb.t.Helper()
	tb.do(chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		_, err := cdp.Call(ctx, target, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: recordShown})
		return err
	}))
	var runs []pageTiming
	for range fleetRuns() {
		tb.open(url)
		// Checked at each animation frame, not at each change of the DOM: the
		// mark is set when nothing changes any more.
		if _, err := chromedp.Run(tb.ctx, chromedp.Poll[chromedp.Void](`window.__shown > 0`, chromedp.WithPollingTimeout(waitLong))); err != nil {
			tb.t.Fatalf("waiting for the first frame of %s: %v", url, err)
		}
		runs = append(runs, eval[pageTiming](tb, fmt.Sprintf(`(function () {
			const n = performance.getEntriesByType("navigation")[0];
			return {FirstByte: n.responseStart, LastByte: n.responseEnd, Parsed: n.domContentLoadedEventEnd, Shown: window.__shown,
				Bytes: n.encodedBodySize, Rows: document.querySelectorAll(%s).length};
		})()`, jsString(selector))))
		r := runs[len(runs)-1]
		tb.t.Logf("run %d: %s", len(runs), r)
		if r.Rows < want {
			tb.t.Errorf("run %d showed %d of %s, want %d", len(runs), r.Rows, selector, want)
		}
	}
	return slices.MinFunc(runs, func(a, b pageTiming) int { return cmp.Compare(a.Shown, b.Shown) })
}

// createFleet creates n Syncs spread over namespaces, each with a status the
// agent could have written, 16 at a time.
func createFleet(t *testing.T, c client.Client, namespaces []string, n int) {
	t.Helper()
	work := make(chan int)
	errs := make(chan error, n)
	var wg gosync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := createFleetSync(t.Context(), c, namespaces[i%len(namespaces)], i); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// createFleetSync creates Sync number i of the fleet in ns and writes its
// status: every third OutOfSync, every fifth suspended, every seventh failing on
// a file of its commit, every eleventh Degraded, every thirteenth Progressing.
func createFleetSync(ctx context.Context, c client.Client, ns string, i int) error {
	s := &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%04d", i), Labels: map[string]string{"tier": []string{"web", "db"}[i%2]}},
		Spec: v1alpha1.SyncSpec{
			Source:      v1alpha1.SourceSpec{URL: "https://git.example.com/org/apps.git", Ref: v1alpha1.GitRef{Branch: "main"}, Path: fmt.Sprintf("apps/app-%04d", i)},
			Destination: v1alpha1.DestinationSpec{Namespace: ns},
			Suspend:     i%5 == 0,
			SelfHeal:    ptr.To(true),
		},
	}
	if err := c.Create(ctx, s); err != nil {
		return fmt.Errorf("creating Sync %s/%s: %w", ns, s.Name, err)
	}
	rev := fmt.Sprintf("main@sha1:%040x", i*7919)
	now := metav1.Now()
	st := v1alpha1.SyncStatus{
		ObservedGeneration: s.Generation, SourceRevision: rev, LastAppliedRevision: rev, LastAppliedTime: &now,
		Sync: v1alpha1.SyncStatusSynced, Health: v1alpha1.HealthHealthy,
		Conditions: []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded,
			Message: "applied " + rev, ObservedGeneration: s.Generation, LastTransitionTime: now}},
		History: []v1alpha1.HistoryEntry{{Revision: rev, AppliedAt: now, Health: v1alpha1.HealthHealthy, Message: fmt.Sprintf("Release %d of app-%04d", i%40, i)}},
	}
	switch {
	case i%7 == 0:
		st.Conditions = append(st.Conditions, metav1.Condition{Type: v1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRenderFailed,
			Message: fmt.Sprintf("apps/app-%04d/kustomization.yaml: resources: deployment.yaml: no such file", i), ObservedGeneration: s.Generation, LastTransitionTime: now})
	case i%11 == 0:
		st.Health = v1alpha1.HealthDegraded
	case i%13 == 0:
		st.Health = v1alpha1.HealthProgressing
	}
	if i%3 == 0 {
		st.Sync = v1alpha1.SyncStatusOutOfSync
	}
	s.Status = st
	if err := c.Status().Update(ctx, s); err != nil {
		return fmt.Errorf("writing the status of Sync %s/%s: %w", ns, s.Name, err)
	}
	return nil
}

// url is the address of the page the tab shows.
func (tb *tab) url() string {
	tb.t.Helper()
	u := eval[string](tb, `location.href`)
	if !strings.HasPrefix(u, "http") {
		tb.t.Fatalf("the tab shows %q, not a page of the UI", u)
	}
	return u
}
