package browser

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// The Secret values of the diff test: neither may appear on a page, as written or
// base64-encoded.
const (
	gitPassword  = "git-password-0815"
	livePassword = "changed-by-hand-4711"
)

// TestTheDiffMasksASecret changes a Secret and a ConfigMap the agent applied
// behind its back (the Sync reports drift only), follows the Sync page's link to
// the diff of its OutOfSync objects, and reads there the ConfigMap's change line
// by line and the Secret's change masked: neither password, in any encoding.
func TestTheDiffMasksASecret(t *testing.T) {
	needFullSet(t)
	c := newClient(t)
	ns := newNamespace(t, c, "shop")
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "shop")
	repo.Commit(t, map[string]string{
		"web/config.yaml": configMap("web-config", "hello"),
		"web/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: web-creds\nstringData:\n  password: " + gitPassword + "\n",
	}, "Greet, with a password")
	startAgent(t)
	web := newSync(t, c, ns, "web", repo, "web", noSelfHeal)
	waitForSync(t, c, web, "is Ready", isReady)

	secret := &corev1.Secret{}
	harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web-creds"}, secret))
	patch := client.MergeFrom(secret.DeepCopy())
	secret.Data["password"] = []byte(livePassword)
	harness.Must(t, c.Patch(t.Context(), secret, patch))
	cm := &corev1.ConfigMap{}
	harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web-config"}, cm))
	patch = client.MergeFrom(cm.DeepCopy())
	cm.Data["greeting"] = "changed by hand"
	harness.Must(t, c.Patch(t.Context(), cm, patch))
	waitForSync(t, c, web, "reports both objects OutOfSync", func(s *v1alpha1.Sync) bool {
		drifted := 0
		for _, r := range s.Status.Resources {
			if r.Sync == v1alpha1.SyncStatusOutOfSync {
				drifted++
			}
		}
		return drifted == 2
	})

	url := startUI(t, controlplane.Shared(t).KubeconfigPath())
	tb := signIn(t, url)
	tb.open(fmt.Sprintf("%s/syncs/%s/web", base(t, url), ns))
	if got := tb.click(`a#diff-all`); got != 200 {
		t.Fatalf("the link to the diff led to a page of status %d", got)
	}
	diffs := eval[map[string]string](tb, `Object.fromEntries(Array.from(document.querySelectorAll('section.diff')).map(s =>
		[s.getAttribute('data-object'), s.querySelector('.diff-state').textContent + '\n' + Array.from(s.querySelectorAll('.line')).map(l => l.className + ' ' + l.textContent).join('\n')]))`)
	t.Logf("diffs: %q", diffs)
	cmDiff, secretDiff := diffs["ConfigMap/"+ns+"/web-config"], diffs["Secret/"+ns+"/web-creds"]
	if !strings.HasPrefix(cmDiff, "differs\n") || !strings.Contains(cmDiff, "line add +  greeting: hello") || !strings.Contains(cmDiff, "line del -  greeting: changed by hand") {
		t.Errorf("the ConfigMap's diff does not show the greeting set back from the hand-made change:\n%s", cmDiff)
	}
	if !strings.HasPrefix(secretDiff, "differs\n") || !strings.Contains(secretDiff, "*** (changed)") {
		t.Errorf("the Secret's diff does not show a masked change:\n%s", secretDiff)
	}
	page := eval[string](tb, `document.documentElement.outerHTML`)
	for _, value := range []string{gitPassword, livePassword} {
		for _, shown := range []string{value, base64.StdEncoding.EncodeToString([]byte(value))} {
			if strings.Contains(page, shown) {
				t.Errorf("the diff page shows a Secret's value (%q)", shown)
			}
		}
	}
	tb.accessible("the diff")
	tb.screenshot("diff", 1100)

	t.Run("the Secret's panel, from its box in the graph, masks every value", func(t *testing.T) {
		tb := tb.in(t)
		tb.open(fmt.Sprintf("%s/syncs/%s/web/graph", base(t, url), ns))
		if got := tb.click(`.graph .node a[href*="Secret"]`); got != 200 {
			t.Fatalf("the Secret's box led to a page of status %d", got)
		}
		manifest := tb.text("pre.manifest")
		if !strings.Contains(manifest, "password: '***'") || strings.Contains(manifest, "managedFields") {
			t.Errorf("the Secret's live manifest does not show its password masked and managedFields hidden:\n%s", manifest)
		}
		if got := tb.click(`a[href*="managedFields=show"]`); got != 200 {
			t.Fatalf("showing managedFields led to a page of status %d", got)
		}
		if manifest := tb.text("pre.manifest"); !strings.Contains(manifest, "managedFields") {
			t.Errorf("managedFields asked for and not shown:\n%s", manifest)
		}
		page := eval[string](tb, `document.documentElement.outerHTML`)
		for _, value := range []string{gitPassword, livePassword} {
			for _, shown := range []string{value, base64.StdEncoding.EncodeToString([]byte(value))} {
				if strings.Contains(page, shown) {
					t.Errorf("the Secret's panel shows a value (%q)", shown)
				}
			}
		}
		tb.accessible("the Secret's panel")
		tb.screenshot("object-secret", 1100)
		if got := tb.click(`.views a[data-view="desired"]`); got != 200 {
			t.Fatalf("the Secret's desired view answered %d", got)
		}
		if desired := tb.text("pre#desired"); !strings.Contains(desired, "password: '***'") {
			t.Errorf("the Secret's desired view does not show its password masked:\n%s", desired)
		}
		if got := tb.click(`.views a[data-view="diff"]`); got != 200 {
			t.Fatalf("the Secret's diff view answered %d", got)
		}
		if diff := tb.text("section.diff"); !strings.Contains(diff, "*** (changed)") {
			t.Errorf("the Secret's diff view does not show a masked change:\n%s", diff)
		}
		noSecretValue(tb, "the Secret's desired and diff views")
	})

	t.Run("the ConfigMap's panel shows it live, as git declares it, and the diff", func(t *testing.T) {
		tb := tb.in(t)
		tb.open(fmt.Sprintf("%s/syncs/%s/web/graph", base(t, url), ns))
		if got := tb.click(`.graph .node a[href*="ConfigMap"]`); got != 200 {
			t.Fatalf("the ConfigMap's box led to a page of status %d", got)
		}
		if live := tb.text("pre.manifest"); !strings.Contains(live, "greeting: changed by hand") {
			t.Errorf("the live view does not show the change by hand:\n%s", live)
		}
		if got := tb.click(`.views a[data-view="desired"]`); got != 200 {
			t.Fatalf("the desired view answered %d", got)
		}
		if desired := tb.text("pre#desired"); !strings.Contains(desired, "greeting: hello") || strings.Contains(desired, "changed by hand") {
			t.Errorf("the desired view does not show git's greeting alone:\n%s", desired)
		}
		if current := tb.text(`.views a[aria-current="page"]`); current != "Desired (git)" {
			t.Errorf("the current view's tab says %q, want Desired (git)", current)
		}
		tb.accessible("the ConfigMap's desired view")
		tb.screenshot("object-desired", 1100)
		if got := tb.click(`.views a[data-view="diff"]`); got != 200 {
			t.Fatalf("the diff view answered %d", got)
		}
		lines := eval[[]string](tb, `Array.from(document.querySelectorAll('section.diff .line')).map(l => l.className + ' ' + l.textContent)`)
		if !slices.Contains(lines, "line add +  greeting: hello") || !slices.Contains(lines, "line del -  greeting: changed by hand") {
			t.Errorf("the diff view does not show the greeting set back from the hand-made change:\n%s", strings.Join(lines, "\n"))
		}
		tb.accessible("the ConfigMap's diff view")
		tb.screenshot("object-diff", 1100)
	})
}

// noSecretValue fails the test if the page holds either password of the test,
// as written or base64-encoded.
func noSecretValue(tb *tab, what string) {
	tb.t.Helper()
	page := eval[string](tb, `document.documentElement.outerHTML`)
	for _, value := range []string{gitPassword, livePassword} {
		for _, shown := range []string{value, base64.StdEncoding.EncodeToString([]byte(value))} {
			if strings.Contains(page, shown) {
				tb.t.Errorf("%s show a Secret's value (%q)", what, shown)
			}
		}
	}
}
