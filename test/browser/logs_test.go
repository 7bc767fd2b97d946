package browser

import (
	"context"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

const talkerPod = `apiVersion: v1
kind: Pod
metadata:
  name: talker
spec:
  initContainers:
  - name: setup
    image: registry.k8s.io/pause:3.10
  containers:
  - name: talker
    image: registry.k8s.io/pause:3.10
`

// TestAPodsLogStreamsIntoItsLogsPage applies a Pod, which kwok runs on its fake
// node and whose log is a file the test writes (kwok serves it as the kubelet
// would, and kube-apiserver streams it as for `kubectl logs -f`). From the
// Sync's graph, the Pod's panel and its Logs link, the page shows the lines
// written so far, as text, then a line written after it opened, without a
// reload.
func TestAPodsLogStreamsIntoItsLogsPage(t *testing.T) {
	needFullSet(t)
	c := newClient(t)
	ns := newNamespace(t, c, "logs")
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "logs")
	repo.Commit(t, map[string]string{"talker/pod.yaml": talkerPod}, "Run the talker")
	startAgent(t)
	talker := newSync(t, c, ns, "talker", repo, "talker")
	waitForSync(t, c, talker, "is Ready", isReady)
	harness.Eventually(t, waitLong, "the Pod talker runs", func(ctx context.Context) (bool, error) {
		pod := &corev1.Pod{}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "talker"}, pod)
		return err == nil && pod.Status.Phase == corev1.PodRunning, client.IgnoreNotFound(err)
	})
	log, err := controlplane.Shared(t).ServePodLog(t.Context(), ns, "talker")
	harness.Must(t, err)
	harness.Must(t, log.Append(
		"listening on :8080",
		"GET /healthz 200 <b>not bold</b>",
		"\x1b[31mwarning\x1b[0m: cache cold",
	))

	tb := signIn(t, startUI(t, controlplane.Shared(t).KubeconfigPath()))
	tb.open(base(t, tb.url()) + "/syncs/" + ns + "/talker/graph")
	if got := tb.click(`.graph a[href$="` + url.QueryEscape("/Pod/"+ns+"/talker") + `"]`); got != 200 {
		t.Fatalf("the Pod's box led to a page of status %d", got)
	}
	if got := tb.click(`#logs-link`); got != 200 {
		t.Fatalf("the Logs link led to a page of status %d", got)
	}
	if got := eval[[]string](tb, `Array.from(document.querySelectorAll('.log-containers a')).map(a => a.textContent)`); strings.Join(got, " ") != "setup talker" {
		t.Errorf("the containers linked are %q, want setup and talker", got)
	}
	tb.waitFor("the lines written so far are shown", `document.querySelectorAll('#log-lines .log-line').length === 3 &&
		document.getElementById('log-state').textContent === 'Following the log.'`)
	want := "listening on :8080\nGET /healthz 200 <b>not bold</b>\nwarning: cache cold\n"
	if got := tb.text("#log-lines"); got != want {
		t.Errorf("the log reads %q, want %q", got, want)
	}
	if n := eval[int](tb, `document.querySelectorAll('#log-lines b').length`); n != 0 {
		t.Errorf("a line of the log became markup: %d <b> elements", n)
	}

	// A mark the page keeps only if it is not loaded again.
	eval[bool](tb, `window.__notReloaded = true`)
	harness.Must(t, log.Append("GET /orders 200 after the page opened"))
	tb.waitFor("the line written after the page opened is shown", `document.querySelectorAll('#log-lines .log-line').length === 4 &&
		document.querySelector('#log-lines .log-line:last-child').textContent === 'GET /orders 200 after the page opened\n'`)
	if !eval[bool](tb, `window.__notReloaded === true`) {
		t.Error("the page was loaded again to show the new line")
	}
	tb.noScriptRan()
	tb.accessible("the logs page")
	tb.screenshot("logs", 1100)
	tb.darkScheme(true)
	tb.screenshot("logs-dark", 1100)
	tb.darkScheme(false)

	t.Run("a user who may not read logs sees the API server's refusal", func(t *testing.T) {
		reader := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "reader"}
		grant(t, c, reader, ns, readSyncs, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}})
		kubeconfig := controlplane.Shared(t).KubeconfigPath()
		waitUntilAllowed(t, kubeconfig, "reader", ns)
		tb := signIn(t, startUI(t, kubeconfig, "--as", "reader", "-n", ns))
		tb.open(base(t, tb.url()) + "/syncs/" + ns + "/talker/object?key=" + url.QueryEscape("/Pod/"+ns+"/talker"))
		if got := tb.click(`#logs-link`); got != 200 {
			t.Fatalf("the Logs link led to a page of status %d", got)
		}
		tb.waitFor("the refusal is shown", `document.getElementById('log-state').getAttribute('data-state') === 'refused'`)
		if got := tb.text("#log-state"); !strings.Contains(got, `User "reader" cannot get resource "pods/log"`) {
			t.Errorf("the page says %q, want the API server's refusal of pods/log", got)
		}
		if n := eval[int](tb, `document.querySelectorAll('#log-lines .log-line').length`); n != 0 {
			t.Errorf("%d lines of the log shown to a user who may not read it", n)
		}
		tb.screenshot("logs-refused", 1100)
	})
}
