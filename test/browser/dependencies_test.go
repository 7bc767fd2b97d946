package browser

import (
	"fmt"
	"strings"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
)

// TestTheDependenciesPageShowsAChainAndWhoWaits makes a chain of Syncs,
// first → second → third (each dependsOn the one before), the first failing on
// a broken file, and opens the dependency graph: three columns, the second
// waiting for the first. Then the first's file is mended, and the page, as it
// stands, stops saying the second waits for it once the first is Ready.
func TestTheDependenciesPageShowsAChainAndWhoWaits(t *testing.T) {
	needBrowser(t)
	c := newClient(t)
	ns := newNamespace(t, c, "chain")
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "chain")
	repo.Commit(t, map[string]string{
		"first/config.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [oops\n",
		"second/config.yaml": configMap("second-config", "hello"),
		"third/config.yaml":  configMap("third-config", "hello"),
	}, "A chain of three")
	startAgent(t)
	dependsOn := func(name string) func(*v1alpha1.Sync) {
		return func(s *v1alpha1.Sync) { s.Spec.DependsOn = []v1alpha1.DependencyReference{{Name: name}} }
	}
	first := newSync(t, c, ns, "first", repo, "first")
	second := newSync(t, c, ns, "second", repo, "second", dependsOn("first"))
	newSync(t, c, ns, "third", repo, "third", dependsOn("second"))
	waitForSync(t, c, first, "is Stalled", isStalled)
	waitForSync(t, c, second, "waits for first", func(s *v1alpha1.Sync) bool {
		r := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
		return r != nil && r.Reason == v1alpha1.ReasonDependencyNotReady
	})

	tb := signIn(t, startUI(t, controlplane.Shared(t).KubeconfigPath()))
	tb.open(base(t, tb.url()) + "/?namespace=" + ns)
	tb.click(`.fleet-choices a[href^="/dependencies"]`)
	tb.waitFor("the live stream is open", `document.getElementById('live').textContent === 'live'`)
	box := func(name string) string { return fmt.Sprintf(`[id="sync-%s/%s"]`, ns, name) }

	t.Run("each Sync is drawn in the column after what it depends on", func(t *testing.T) {
		tb := tb.in(t)
		for i, name := range []string{"first", "second", "third"} {
			column := fmt.Sprintf(`.dep-col:nth-child(%d) %s`, i+1, box(name))
			if n := eval[int](tb, fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(column))); n != 1 {
				t.Errorf("%s is not in column %d", name, i+1)
			}
		}
		if got := tb.text(box("first") + ` [data-field=health]`); got == "" {
			t.Error("first's box has no health in words")
		}
		if got := tb.text(box("first") + ` .dep-head [data-field=ready]`); got != "False" {
			t.Errorf("first's box says Ready %q, want False", got)
		}
	})

	t.Run("the second says it waits for the first", func(t *testing.T) {
		tb := tb.in(t)
		if !eval[bool](tb, fmt.Sprintf(`!document.querySelector(%s).hidden`, jsString(box("second")+" .dep-waiting"))) {
			t.Error("second's box does not say Waiting")
		}
		wait := eval[string](tb, fmt.Sprintf(`document.querySelector(%s).innerText`, jsString(box("second")+" .dep-links")))
		if !strings.Contains(wait, "waiting for first: it is not Ready") {
			t.Errorf("second's dependencies read %q, want it waiting for first", wait)
		}
		if !eval[bool](tb, fmt.Sprintf(`!document.querySelector(%s).hidden`, jsString(box("third")+" .dep-waiting"))) {
			t.Error("third's box does not say Waiting (for second)")
		}
		if eval[bool](tb, fmt.Sprintf(`!document.querySelector(%s).hidden`, jsString(box("first")+" .dep-waiting"))) {
			t.Error("first's box says Waiting: it depends on nothing")
		}
	})

	t.Run("the page passes the accessibility checks, light and dark", func(t *testing.T) {
		tb := tb.in(t)
		tb.screenshot("dependencies", 1100)
		tb.accessible("the dependencies")
		tb.noScriptRan()
	})

	t.Run("once the first is Ready, the open page stops saying the second waits for it", func(t *testing.T) {
		tb := tb.in(t)
		eval[bool](tb, `window.__sameDocument = true`)
		repo.Commit(t, map[string]string{"first/config.yaml": configMap("first-config", "mended")}, "Mend the first")
		waitForSync(t, c, first, "is Ready", isReady)
		tb.waitFor("second no longer waits for first", fmt.Sprintf(`document.querySelector(%s).hidden`, jsString(box("second")+" .dep-links .dep-wait")))
		if got := tb.text(box("second") + ` .dep-links [data-field=ready]`); got != "True" {
			t.Errorf("second's dependency on first says Ready %q, want True", got)
		}
		if !eval[bool](tb, `window.__sameDocument === true`) {
			t.Error("the page reloaded; want it changed in place")
		}
	})
}
