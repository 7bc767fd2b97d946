package ui

import (
	"encoding/base64"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// The panel of an object of the inventory has three views: live, what git
// declares (the render's object, a Secret's values masked) and the diff of the
// two (the diff page's, for that object alone); and a link to the Sync's path
// in git at the applied commit.
func TestTheObjectPanelShowsWhatGitDeclaresAndTheDiff(t *testing.T) {
	c := admin(t)
	ns, render := diffFixture(t, c)
	sy := &v1alpha1.Sync{}
	harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "app"}, sy))
	sy.Spec.Source.URL, sy.Spec.Source.Path = "https://deploy-bot:s3cret@github.com/acme/deploy.git", "apps/shop"
	harness.Must(t, c.Update(t.Context(), sy))
	b := startUIWith(t, Options{Config: controlplane.Shared(t).Config(), Namespace: "default", AllNamespaces: true, Render: render})
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	web := objectPath(key, v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "web"})
	creds := objectPath(key, v1alpha1.ObjectRef{Version: "v1", Kind: "Secret", Namespace: ns, Name: "creds"})

	t.Run("the live view links to the others and to git", func(t *testing.T) {
		page := b.get(web)
		for _, want := range []string{
			`<pre class="manifest"`, `colour: blue`, `data-view="live" aria-current="page"`,
			`href="` + strings.ReplaceAll(web, "&", "&amp;") + `&amp;view=desired" data-view="desired"`,
			`id="git-link" href="https://github.com/acme/deploy/tree/4f2c1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b/apps/shop"`,
		} {
			if !strings.Contains(page, want) {
				t.Errorf("the live view lacks %q:\n%s", want, page)
			}
		}
		if strings.Contains(page, "s3cret") || strings.Contains(page, "deploy-bot") {
			t.Errorf("the page holds the repository URL's credentials:\n%s", page)
		}
	})
	t.Run("the desired view shows the ConfigMap as git declares it", func(t *testing.T) {
		page := b.get(web + "&view=desired")
		if !strings.Contains(page, `<pre class="manifest" id="desired">`) || !strings.Contains(page, "colour: green") || strings.Contains(page, "colour: blue") {
			t.Errorf("the desired view does not show git's colour alone:\n%s", page)
		}
	})
	t.Run("the diff view shows its diff alone", func(t *testing.T) {
		page := b.get(web + "&view=diff")
		for _, want := range []string{`<span class="line del">-  colour: blue</span>`, `<span class="line add">&#43;  colour: green</span>`} {
			if !strings.Contains(page, want) {
				t.Errorf("the diff view lacks %q:\n%s", want, page)
			}
		}
		if strings.Count(page, `class="diff"`) != 1 {
			t.Errorf("the diff view shows other objects' diffs:\n%s", page)
		}
	})
	t.Run("a Secret's desired and diff views show no value", func(t *testing.T) {
		desired, diff := b.get(creds+"&view=desired"), b.get(creds+"&view=diff")
		if !strings.Contains(desired, "password: &#39;***&#39;") {
			t.Errorf("the Secret's desired view does not show its password masked:\n%s", desired)
		}
		if !strings.Contains(diff, "*** (changed)") {
			t.Errorf("the Secret's diff view does not show a masked change:\n%s", diff)
		}
		for _, secret := range []string{liveSecretValue, gitSecretValue} {
			for _, form := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))} {
				if strings.Contains(desired+diff, form) {
					t.Errorf("a view holds the Secret's value %q", form)
				}
			}
		}
	})
}
