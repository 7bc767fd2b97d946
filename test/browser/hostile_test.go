package browser

import (
	"fmt"
	neturl "net/url"
	"strings"
	"testing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
)

// Hostile text from git and from the cluster: each would run script, or add an
// element, if a page wrote it as markup.
const (
	hostileSubject  = `<script>window.__pwned="s"</script><img src=x onerror=window.__pwned="img"> "double" & 'single'`
	hostileFileName = `<img src=x onerror=window.__pwned="file">.yaml`
	hostilePin      = `</code><script>window.__pwned="pin"</script>`
)

// TestHostileTextIsShownAsText gives the UI a commit subject, a file name and an
// annotation made of markup, and checks on each page, as rendered by the server
// and as changed live by the page's script, that the text appears as written and
// that nothing of it became an element or ran.
func TestHostileTextIsShownAsText(t *testing.T) {
	needBrowser(t)
	c := newClient(t)
	ns := newNamespace(t, c, "hostile")
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "hostile")
	repo.Commit(t, map[string]string{
		"app/config.yaml":          configMap("app-config", "hello"),
		"files/" + hostileFileName: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [oops\n",
	}, "Greet")
	startAgent(t)
	subject := newSync(t, c, ns, "subject", repo, "app")
	file := newSync(t, c, ns, "filename", repo, "files")
	newSync(t, c, ns, "pinned", repo, "app", func(s *v1alpha1.Sync) {
		s.Annotations = map[string]string{v1alpha1.PinRevisionAnnotation: hostilePin}
	})
	waitForSync(t, c, subject, "is Ready", isReady)
	waitForSync(t, c, file, "is Stalled", isStalled)

	url := startUI(t, controlplane.Shared(t).KubeconfigPath())
	tb := signIn(t, url)
	tb.waitFor("the live stream is open", `document.getElementById('live').textContent === 'live'`)
	field := func(name, f string) string { return fmt.Sprintf(`tr[data-key="%s/%s"] [data-field=%s]`, ns, name, f) }

	t.Run("a commit subject arriving live is text", func(t *testing.T) {
		tb := tb.in(t)
		repo.Commit(t, map[string]string{"app/config.yaml": configMap("app-config", "bonjour")}, hostileSubject)
		tb.waitFor("the hostile subject is shown", fmt.Sprintf(`document.querySelector(%s).textContent === %s`, jsString(field("subject", "subject")), jsString(hostileSubject)))
		tb.noScriptRan()
	})

	t.Run("the fleet page shows them as text", func(t *testing.T) {
		tb := tb.in(t)
		tb.open(base(t, url) + "/")
		if got := tb.text(field("subject", "subject")); got != hostileSubject {
			t.Errorf("subject shown as %q, want %q", got, hostileSubject)
		}
		if got := tb.text(field("filename", "failingMessage")); !strings.Contains(got, "files/"+hostileFileName) {
			t.Errorf("failing message %q does not show the file name as written", got)
		}
		if got := tb.text(fmt.Sprintf(`tr[data-key="%s/pinned"]`, ns)); !strings.Contains(got, "pinned "+hostilePin) {
			t.Errorf("the pinned Sync's row %q does not show the annotation as written", got)
		}
		tb.noScriptRan()
		tb.screenshot("fleet-hostile", 1100)
	})

	t.Run("the Sync pages show them as text", func(t *testing.T) {
		tb := tb.in(t)
		tb.open(base(t, url) + "/syncs/" + ns + "/subject")
		tb.waitFor("the history lists the hostile commit", fmt.Sprintf(`document.body.innerText.includes(%s)`, jsString(hostileSubject)))
		if got := eval[string](tb, `Array.from(document.querySelectorAll('section[aria-labelledby=history] li')).map(li => li.textContent).join('\n')`); !strings.Contains(got, hostileSubject) {
			t.Errorf("history entries %q lack the subject as written", got)
		}
		tb.noScriptRan()
		tb.screenshot("sync-hostile", 1100)

		tb.open(base(t, url) + "/syncs/" + ns + "/filename")
		conditions := eval[string](tb, `document.querySelector('section[aria-labelledby=conditions]').textContent`)
		if !strings.Contains(conditions, "files/"+hostileFileName) {
			t.Errorf("conditions %q do not show the file name as written", conditions)
		}
		tb.noScriptRan()

		tb.open(base(t, url) + "/syncs/" + ns + "/pinned")
		if got := eval[string](tb, `document.querySelector('.summary').textContent`); !strings.Contains(got, hostilePin) {
			t.Errorf("summary %q does not show the pin as written", got)
		}
		tb.noScriptRan()
	})

	t.Run("the tiles and the dependencies show a hostile filter as text", func(t *testing.T) {
		tb := tb.in(t)
		tb.open(base(t, url) + "/?view=tiles&group=" + neturl.QueryEscape(hostilePin) + "&q=" + neturl.QueryEscape(hostileSubject))
		if got := eval[string](tb, `document.querySelector('input[name=q]').value`); got != hostileSubject {
			t.Errorf("the tiles' search box holds %q, want %q", got, hostileSubject)
		}
		tb.noScriptRan()
		tb.open(base(t, url) + "/dependencies?namespace=" + neturl.QueryEscape(hostileSubject))
		if got := tb.text("main"); !strings.Contains(got, "No Sync of namespace "+hostileSubject+" depends on another") {
			t.Errorf("the dependencies of a hostile namespace read %q, want it named as written", got)
		}
		tb.noScriptRan()
	})

	t.Run("the graph shows a hostile filter as text", func(t *testing.T) {
		tb := tb.in(t)
		// The filter is written back into the page: its selects and its links.
		tb.open(base(t, url) + "/syncs/" + ns + "/subject/graph?kind=" + neturl.QueryEscape(hostileSubject) + "&health=" + neturl.QueryEscape(hostilePin))
		if got := tb.text("#shown"); !strings.HasPrefix(got, "0 of ") {
			t.Errorf("the graph says %q, want no object passing the hostile filter", got)
		}
		if got := eval[string](tb, `document.querySelector('#open-all').search`); !strings.Contains(got, "open=all") {
			t.Errorf("the link to open every group is %q", got)
		}
		tb.noScriptRan()
	})
}
