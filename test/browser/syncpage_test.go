package browser

import (
	"context"
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

const webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.k8s.io/pause:3.10
`

// TestTheSyncPageShowsPodsRolledOut applies a Deployment of two replicas, which
// kube-controller-manager, kube-scheduler and kwok roll out, and reads on the
// Sync's page the tree a person expands in their head: the Deployment, its
// ReplicaSet under it, the two Pods under that, each Healthy.
func TestTheSyncPageShowsPodsRolledOut(t *testing.T) {
	needFullSet(t)
	c := newClient(t)
	ns := newNamespace(t, c, "shop")
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "shop")
	repo.Commit(t, map[string]string{
		"web/config.yaml":     configMap("web-config", "hello"),
		"web/deployment.yaml": webDeployment,
	}, "Run web with two replicas")
	startAgent(t)
	web := newSync(t, c, ns, "web", repo, "web")
	waitForSync(t, c, web, "is Ready and Healthy", func(s *v1alpha1.Sync) bool {
		return isReady(s) && s.Status.Health == v1alpha1.HealthHealthy
	})
	harness.Eventually(t, waitLong, "two pods of web are Ready", func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": "web"})
		ready := 0
		for _, p := range pods.Items {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == 2, err
	})

	url := startUI(t, controlplane.Shared(t).KubeconfigPath())
	tb := signIn(t, url)
	tb.screenshot("fleet-admin", 1100)
	if got := tb.click(`a[href="/syncs/` + ns + `/web"]`); got != 200 {
		t.Fatalf("the Sync's link led to a page of status %d", got)
	}
	// Each node of the tree: its kind, name and health, and the node it hangs
	// under (the parent li's name).
	nodes := eval[[]string](tb, `Array.from(document.querySelectorAll('.tree li')).filter(li => li.querySelector(':scope > .obj')).map(li => {
		const parent = li.parentElement.closest('li');
		const kind = li.firstChild.nodeType === Node.TEXT_NODE ? li.firstChild.textContent.trim() : li.parentElement.closest('li').firstChild.textContent.trim();
		const health = Array.from(li.querySelectorAll(':scope > .status')).map(s => s.textContent).join(' ');
		const under = parent && parent.querySelector(':scope > .obj') ? parent.querySelector(':scope > .obj').textContent : '';
		return kind + ' ' + li.querySelector(':scope > .obj').textContent + ' ' + health + ' under ' + under;
	})`)
	t.Logf("tree:\n%s", strings.Join(nodes, "\n"))
	var replicaSets, pods int
	for _, n := range nodes {
		switch {
		case strings.HasPrefix(n, "ReplicaSet web-") && strings.HasSuffix(n, " Healthy under web"):
			replicaSets++
		case strings.HasPrefix(n, "Pod web-") && strings.Contains(n, " Healthy under web-"):
			pods++
		}
	}
	if replicaSets != 1 || pods != 2 {
		t.Errorf("the tree shows %d Healthy ReplicaSets under the Deployment web and %d Healthy Pods under one, want 1 and 2:\n%s", replicaSets, pods, strings.Join(nodes, "\n"))
	}
	if !containsLine(nodes, "Deployment.apps web Synced Healthy under ") {
		t.Errorf("the tree lacks the Deployment web, Synced and Healthy:\n%s", strings.Join(nodes, "\n"))
	}
	t.Run("the graph shows the ReplicaSet and its Pods under the Deployment", func(t *testing.T) {
		tb := tb.in(t)
		if got := tb.click(`#graph-link`); got != 200 {
			t.Fatalf("the graph's link led to a page of status %d", got)
		}
		// Each box of the graph: its kind, name and health, and the box it
		// hangs from (the name in the nearest box to its left).
		boxes := eval[[]string](tb, `Array.from(document.querySelectorAll('.graph li > .node')).map(n => {
			const li = n.parentElement;
			const owner = li.parentElement.closest('li');
			const ownerNode = owner && owner.querySelector(':scope > .node, :scope > details > summary');
			return n.querySelector('.kind').textContent + ' ' + n.querySelector('.name').textContent + ' ' +
				Array.from(n.querySelectorAll('.mark')).map(m => m.textContent).join(' ') +
				' from ' + (ownerNode ? ownerNode.querySelector('.name').textContent : '');
		})`)
		t.Logf("graph:\n%s", strings.Join(boxes, "\n"))
		var replicaSets, pods int
		for _, b := range boxes {
			switch {
			case strings.HasPrefix(b, "ReplicaSet web-") && strings.HasSuffix(b, " Healthy from web"):
				replicaSets++
			case strings.HasPrefix(b, "Pod web-") && strings.Contains(b, " Healthy from web-"):
				pods++
			}
		}
		if replicaSets != 1 || pods != 2 {
			t.Errorf("the graph shows %d Healthy ReplicaSets from the Deployment web and %d Healthy Pods from one, want 1 and 2:\n%s", replicaSets, pods, strings.Join(boxes, "\n"))
		}
		if n := eval[int](tb, `document.querySelectorAll('.graph .node svg use').length`); n < len(boxes) {
			t.Errorf("%d icons for %d boxes", n, len(boxes))
		}
		tb.accessible("the graph")
		tb.screenshot("graph", 1280)
		tb.darkScheme(true)
		tb.screenshot("graph-dark", 1280)
		tb.darkScheme(false)
		tb.open(base(t, tb.url()) + "/syncs/" + ns + "/web")
	})
	tb.screenshot("sync", 1100)
	tb.screenshotOf("sync-top", 1000, 970) // docs/ui-sync.png: the summary to the tree
	tb.screenshot("sync-narrow", 400)
	tb.accessible("the Sync's page")
	tb.darkScheme(true)
	tb.screenshot("sync-dark", 1100)
	tb.darkScheme(false)

	t.Run("the open graph shows a rollout's new ReplicaSet and its Pods", func(t *testing.T) {
		tb := tb.in(t)
		tb.open(base(t, tb.url()) + "/syncs/" + ns + "/web/graph")
		before := eval[[]string](tb, `Array.from(document.querySelectorAll('.graph .node[data-kind="ReplicaSet"] .name')).map(n => n.textContent)`)
		if len(before) != 1 {
			t.Fatalf("the graph shows ReplicaSets %q before the rollout, want one", before)
		}
		// A mark on the page's window: a navigation (a reload) would lose it.
		eval[bool](tb, `window.__sameDocument = true`)
		// The person folds the ConfigMaps' group, open as drawn: it stays folded
		// when the graph changes.
		configMaps := `document.querySelector('details[data-fold$="/ConfigMap"]')`
		tb.do(chromedp.Click(`details[data-fold$="/ConfigMap"] > summary`))
		if eval[bool](tb, configMaps+`.open`) {
			t.Fatal("the ConfigMaps' group is open after a click on it, want it folded")
		}
		// The click left the keyboard's focus on the group's summary: it keeps
		// it when the graph changes.
		focused := `(document.activeElement && document.activeElement.tagName === 'SUMMARY' && document.activeElement.parentElement === ` + configMaps + `)`
		if !eval[bool](tb, focused) {
			t.Fatal("the ConfigMaps' summary has not the focus after a click on it")
		}
		pushed := time.Now()
		repo.Commit(t, map[string]string{"web/deployment.yaml": strings.Replace(webDeployment, "pause:3.10", "pause:3.9", 1)}, "Run web on pause 3.9")
		// The new ReplicaSet's box, its name not among those before, with two
		// Pods' boxes under it.
		tb.waitFor("the new ReplicaSet and its two Pods are in the graph", `Array.from(document.querySelectorAll('.graph .node[data-kind="ReplicaSet"]')).some(n =>
			!`+jsStrings(before)+`.includes(n.querySelector('.name').textContent) &&
			n.parentElement.querySelectorAll(':scope > ul .node[data-kind="Pod"]').length === 2)`)
		t.Logf("the new ReplicaSet and its Pods were shown %s after the push", elapsed(pushed))
		if !eval[bool](tb, `window.__sameDocument === true`) {
			t.Error("the page was navigated; want the graph changed in place")
		}
		if eval[bool](tb, configMaps+`.open`) {
			t.Error("the ConfigMaps' group the person folded is open again after the graph changed")
		}
		if !eval[bool](tb, focused) {
			t.Error("the focus left the ConfigMaps' summary when the graph changed")
		}
		boxes := eval[[]string](tb, `Array.from(document.querySelectorAll('.graph .node')).map(n => n.textContent.replace(/\s+/g, ' ').trim())`)
		t.Logf("graph after the rollout:\n%s", strings.Join(boxes, "\n"))
		tb.screenshot("graph-rollout", 1280)
	})
}

// jsStrings is strs as a JavaScript array literal.
func jsStrings(strs []string) string {
	quoted := make([]string, len(strs))
	for i, s := range strs {
		quoted[i] = jsString(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}
