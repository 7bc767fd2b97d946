package browser

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// releaseSyncs are the rights of a person who may pin a Sync (a rollback is a
// patch) and record who did (an Event), besides reading Syncs and their Events.
var releaseSyncs = []rbacv1.PolicyRule{
	{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"syncs"}, Verbs: []string{"get", "list", "watch", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "list"}},
}

// TestARollbackFromTheTimelineIsMadeAsTheUser applies two commits, then on the
// Sync's timeline presses "Roll back to" the earlier one: as a user who may only
// read Syncs it is shown refused with the API server's words and the Sync stays
// as it was; as a user who may patch Syncs it pins the Sync to that commit, as
// `tether rollback --to` does, the agent applies it, and an Event names that
// user. The compare page between the two revisions shows the changed line.
func TestARollbackFromTheTimelineIsMadeAsTheUser(t *testing.T) {
	needBrowser(t)
	c := newClient(t)
	ns := newNamespace(t, c, "shop")
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "shop")
	first := repo.Commit(t, map[string]string{"web/config.yaml": configMap("web-config", "hello")}, "Greet")
	startAgent(t)
	web := newSync(t, c, ns, "web", repo, "web")
	waitForSync(t, c, web, "applied the first commit", func(s *v1alpha1.Sync) bool {
		return len(s.Status.History) == 1 && plan.CommitOf(s.Status.History[0].Revision) == first
	})
	second := repo.Commit(t, map[string]string{"web/config.yaml": configMap("web-config", "good morning")}, "Greet politely")
	waitForSync(t, c, web, "applied the second commit, Healthy", func(s *v1alpha1.Sync) bool {
		h := s.Status.History
		return len(h) == 2 && plan.CommitOf(h[0].Revision) == second && h[0].HealthyAt != nil
	})

	kubeconfig := controlplane.Shared(t).KubeconfigPath()
	user := func(name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
	}
	grant(t, c, user("viewer"), ns, readSyncs)
	grant(t, c, user("releaser"), ns, releaseSyncs...)
	waitUntilAllowed(t, kubeconfig, "viewer", ns)
	waitUntilAllowed(t, kubeconfig, "releaser", ns)
	rollback := `form.rollback input[name="to"][value$="` + first + `"] + button`

	t.Run("a user who may only read is refused, and the Sync stays as it was", func(t *testing.T) {
		url := startUI(t, kubeconfig, "--as", "viewer", "-n", ns)
		tb := signIn(t, url).in(t)
		tb.open(fmt.Sprintf("%s/syncs/%s/web", base(t, url), ns))
		if got := tb.text(rollback); !strings.HasPrefix(got, "Roll back to main@"+first[:7]) {
			t.Fatalf("the earlier revision's button says %q, want Roll back to it", got)
		}
		if got := tb.press(rollback); got != 403 {
			t.Errorf("Roll back answered %d, want 403", got)
		}
		if got := tb.text("h1"); got != "Refused" {
			t.Errorf("the page after Roll back says %q, want Refused", got)
		}
		if got := tb.text(".message"); !strings.Contains(got, `User "viewer" cannot patch`) {
			t.Errorf("the refusal %q does not quote the API server's", got)
		}
		got := &v1alpha1.Sync{}
		harness.Must(t, c.Get(t.Context(), client.ObjectKeyFromObject(web), got))
		if pin, pinned := got.Annotations[v1alpha1.PinRevisionAnnotation]; pinned {
			t.Errorf("a user who may not patch the Sync pinned it to %q", pin)
		}
	})

	url := startUI(t, kubeconfig, "--as", "releaser", "-n", ns)
	tb := signIn(t, url)
	tb.open(fmt.Sprintf("%s/syncs/%s/web", base(t, url), ns))
	entries := eval[[]string](tb, `Array.from(document.querySelectorAll('.timeline > li')).map(li => li.innerText.replace(/\s+/g, ' ').trim())`)
	t.Logf("timeline:\n%s", strings.Join(entries, "\n"))
	if len(entries) != 2 || !strings.Contains(entries[0], "Greet politely by "+gitserver.AuthorName) || !strings.Contains(entries[0], "Healthy after ") ||
		!strings.Contains(entries[1], "Greet by "+gitserver.AuthorName) {
		t.Errorf("the timeline does not show each revision's subject, author and time to Healthy:\n%s", strings.Join(entries, "\n"))
	}
	tb.accessible("the timeline")
	tb.screenshot("timeline", 1100)

	t.Run("the compare page shows the changed line between the two revisions", func(t *testing.T) {
		tb := tb.in(t)
		if got := tb.click(`form.compare button`); got != 200 {
			t.Fatalf("Compare led to a page of status %d", got)
		}
		diffs := eval[map[string]string](tb, `Object.fromEntries(Array.from(document.querySelectorAll('section.diff')).map(s =>
			[s.getAttribute('data-object'), s.querySelector('.diff-state').textContent + '\n' + Array.from(s.querySelectorAll('.line')).map(l => l.className + ' ' + l.textContent).join('\n')]))`)
		t.Logf("diffs: %q", diffs)
		if len(diffs) != 1 {
			t.Errorf("the compare page shows %d objects, want the one ConfigMap that changed", len(diffs))
		}
		for object, d := range diffs {
			if !strings.HasPrefix(object, "ConfigMap/") || !strings.HasSuffix(object, "/web-config") ||
				!strings.HasPrefix(d, "changed\n") || !strings.Contains(d, "line del -  greeting: hello") || !strings.Contains(d, "line add +  greeting: good morning") {
				t.Errorf("%s: the diff does not show the greeting changed from hello to good morning:\n%s", object, d)
			}
		}
		tb.accessible("the compare page")
		tb.screenshot("compare", 1100)
		tb.open(fmt.Sprintf("%s/syncs/%s/web", base(t, url), ns))
	})

	if got := tb.press(rollback); got != 200 {
		t.Fatalf("Roll back led to a page of status %d", got)
	}
	if got := tb.text(".done"); !strings.Contains(got, "Pinned to the revision chosen") {
		t.Errorf("the page after Roll back says %q, want that the Sync is pinned", got)
	}
	// The Event is created before the page is sent back to the Sync's, which lists it.
	if got, want := tb.text(`section[aria-labelledby="events"]`), "releaser asked to roll back the Sync to "+first+", through tether ui"; !strings.Contains(got, want) {
		t.Errorf("the Sync's Events do not say %q:\n%s", want, got)
	}
	waitForSync(t, c, web, "pinned to the first commit and applied it", func(s *v1alpha1.Sync) bool {
		return s.Annotations[v1alpha1.PinRevisionAnnotation] == first && len(s.Status.History) > 0 && plan.CommitOf(s.Status.History[0].Revision) == first
	})
	harness.Eventually(t, waitLong, "an Event names the user who rolled back", func(ctx context.Context) (bool, error) {
		events := &corev1.EventList{}
		if err := c.List(ctx, events, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == v1alpha1.ReasonRequestedByUser && e.InvolvedObject.Name == "web" &&
				e.Message == "releaser asked to roll back the Sync to "+first+", through tether ui" {
				return true, nil
			}
		}
		return false, nil
	})

	t.Run("Undo removes the pin", func(t *testing.T) {
		tb := tb.in(t)
		if got := tb.press(`form[action$="/unpin"] button`); got != 200 {
			t.Fatalf("Undo led to a page of status %d", got)
		}
		waitForSync(t, c, web, "unpinned", func(s *v1alpha1.Sync) bool {
			_, pinned := s.Annotations[v1alpha1.PinRevisionAnnotation]
			return !pinned
		})
	})
}
