package browser

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

func configMap(name, greeting string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  greeting: %s\n", name, greeting)
}

// TestTheFleetListsSyncsAndShowsADriftLive opens the fleet page on three Syncs
// the agent reconciled (one in sync, one failing on a broken file, one that only
// reports drift), changes an object of the last behind Tether's back, and waits
// for that Sync's row to turn OutOfSync on the page as it stands: no reload, the
// live stream.
func TestTheFleetListsSyncsAndShowsADriftLive(t *testing.T) {
	needBrowser(t)
	c := newClient(t)
	ns := newNamespace(t, c, "shop")
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "fleet")
	repo.Commit(t, map[string]string{
		"web/config.yaml":    configMap("web-config", "hello"),
		"api/config.yaml":    configMap("api-config", "hello"),
		"broken/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [oops\n",
	}, "Greet in English")
	startAgent(t)
	web := newSync(t, c, ns, "web", repo, "web", noSelfHeal)
	api := newSync(t, c, ns, "api", repo, "api")
	broken := newSync(t, c, ns, "broken", repo, "broken")
	waitForSync(t, c, web, "is Ready", isReady)
	waitForSync(t, c, api, "is Ready", isReady)
	waitForSync(t, c, broken, "is Stalled", isStalled)

	tb := signIn(t, startUI(t, controlplane.Shared(t).KubeconfigPath()))
	row := func(name, field string) string {
		return fmt.Sprintf(`tr[data-key="%s/%s"] [data-field=%s]`, ns, name, field)
	}

	t.Run("the fleet lists every Sync with its status in words", func(t *testing.T) {
		tb := tb.in(t)
		tb.waitFor("the live stream is open", `document.getElementById('live').textContent === 'live'`)
		for name, want := range map[string]string{"web": "Synced", "api": "Synced"} {
			if got := tb.text(row(name, "sync")); got != want {
				t.Errorf("%s: sync %q, want %q", name, got, want)
			}
		}
		if got := tb.text(row("web", "health")); got != "Healthy" {
			t.Errorf("web: health %q, want Healthy", got)
		}
		if got := tb.text(row("web", "subject")); got != "Greet in English" {
			t.Errorf("web: subject %q, want the commit's", got)
		}
		if got := tb.text(row("broken", "failingMessage")); !strings.Contains(got, "broken/config.yaml") {
			t.Errorf("broken: failing message %q does not name the broken file", got)
		}
		if got := tb.text(fmt.Sprintf(`tr[data-key="%s/web"] a`, ns)); got != "web" {
			t.Errorf("web's row links %q, want its name", got)
		}
		if got := tb.text(fmt.Sprintf(`section[data-ns="%s"] [data-ns-count="Failing"]`, ns)); got != "1 Failing" {
			t.Errorf("the namespace's head counts %q failing, want 1 Failing (broken)", got)
		}
	})

	tb.accessible("the fleet")

	t.Run("a drift turns the Sync OutOfSync on the open page", func(t *testing.T) {
		tb := tb.in(t)
		// A page that reloaded would lose this flag: the change must come live.
		eval[bool](tb, `window.__sameDocument = true`)
		cm := &corev1.ConfigMap{}
		harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web-config"}, cm))
		patch := client.MergeFrom(cm.DeepCopy())
		cm.Data["greeting"] = "changed by hand"
		drifted := time.Now()
		harness.Must(t, c.Patch(t.Context(), cm, patch))
		tb.waitFor("web's row says OutOfSync", fmt.Sprintf(`document.querySelector(%s).textContent === 'OutOfSync'`, jsString(row("web", "sync"))))
		t.Logf("the page showed web OutOfSync %s after the ConfigMap was changed", elapsed(drifted))
		if !eval[bool](tb, `window.__sameDocument === true`) {
			t.Error("the page reloaded; want the row changed in place")
		}
		if got := eval[string](tb, fmt.Sprintf(`document.querySelector(%s).getAttribute('data-value')`, jsString(row("web", "sync")))); got != string(v1alpha1.SyncStatusOutOfSync) {
			t.Errorf("web's sync cell data-value %q, want OutOfSync (its colour follows it)", got)
		}
		if got := tb.text(row("api", "sync")); got != "Synced" {
			t.Errorf("api: sync %q, want Synced still", got)
		}
		tb.screenshot("fleet", 1100)
	})

	t.Run("the tiles show every Sync in words, and the drift's end live", func(t *testing.T) {
		tb := tb.in(t)
		tb.open(base(t, tb.url()) + "/?namespace=" + ns)
		tb.click(`.fleet-choices a[href*="view=tiles"]`)
		tb.waitFor("the live stream is open", `document.getElementById('live').textContent === 'live'`)
		tile := func(name string) string { return fmt.Sprintf(`a.tile[data-key="%s/%s"]`, ns, name) }
		edge := func(name string) string {
			return eval[string](tb, fmt.Sprintf(`getComputedStyle(document.querySelector(%s)).borderLeftColor`, jsString(tile(name))))
		}
		for name, want := range map[string]string{"web": "OutOfSync", "api": "Synced"} {
			if got := tb.text(tile(name) + " [data-field=sync]"); got != want {
				t.Errorf("%s's tile says %q, want %q", name, got, want)
			}
		}
		if got := tb.text(tile("web") + " [data-field=health]"); got != "Healthy" {
			t.Errorf("web's tile says health %q, want Healthy", got)
		}
		if got := tb.text(tile("broken") + " [data-field=failingReason]"); got == "" {
			t.Error("broken's tile does not say why it fails")
		}
		if ok, warn, bad := edge("api"), edge("web"), edge("broken"); ok == warn || warn == bad || ok == bad {
			t.Errorf("the tiles' edges are %s (api, Synced), %s (web, OutOfSync), %s (broken, failing): want three colours", ok, warn, bad)
		}
		tb.screenshot("fleet-tiles", 1100)
		tb.accessible("the fleet's tiles")
		tb.darkScheme(true)
		tb.screenshot("fleet-tiles-dark", 1100)
		tb.darkScheme(false)

		eval[bool](tb, `window.__sameDocument = true`)
		cm := &corev1.ConfigMap{}
		harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web-config"}, cm))
		patch := client.MergeFrom(cm.DeepCopy())
		cm.Data["greeting"] = "hello"
		harness.Must(t, c.Patch(t.Context(), cm, patch))
		tb.waitFor("web's tile says Synced", fmt.Sprintf(`document.querySelector(%s).textContent === 'Synced'`, jsString(tile("web")+" [data-field=sync]")))
		if !eval[bool](tb, `window.__sameDocument === true`) {
			t.Error("the page reloaded; want the tile changed in place")
		}
		if got, want := edge("web"), edge("api"); got != want {
			t.Errorf("web's tile, Synced again, has the edge %s, want %s as api's", got, want)
		}
		if code := tb.press(tile("web")); code != 200 || tb.text("h1") == "Syncs" {
			t.Errorf("Enter on web's tile answered %d and shows %q, want web's page", code, tb.text("h1"))
		}
		tb.open(base(t, tb.url()) + "/") // the fleet's table, as the next step reads it
	})

	t.Run("a narrow window shows every status without scrolling sideways", func(t *testing.T) {
		tb := tb.in(t)
		tb.do(chromedp.EmulateViewport(400, 800))
		defer tb.do(chromedp.EmulateViewport(1280, 800))
		for _, f := range []string{"sync", "health", "ready"} {
			right := eval[float64](tb, fmt.Sprintf(`document.querySelector(%s).getBoundingClientRect().right`, jsString(row("web", f))))
			if right > 400 {
				t.Errorf("web's %s ends %.0f px from the left of a 400 px window: out of view", f, right)
			}
		}
		tb.screenshot("fleet-narrow", 400)
	})
}
