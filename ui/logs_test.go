package ui

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// TestThePanelOfAPodLinksItsLogsAndTheLogsPageNamesItsContainers: a Pod of a
// namespace of the Sync's workloads has a Logs link in its panel (a ConfigMap
// has none); its logs page links each container, its init container too, and
// shows the first container's log unless asked for another; a container the
// Pod lacks, and an object that is no Pod, are refused. A user who may read the
// Pod but not its log (pods/log) sees the API server's refusal in the stream.
func TestThePanelOfAPodLinksItsLogsAndTheLogsPageNamesItsContainers(t *testing.T) {
	c := admin(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	status := readyStatus("main@sha1:aaaaaaaaaaaa", "first")
	status.Objects = []v1alpha1.InventoryGroup{
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Names: []string{"web"}},
		{Version: "v1", Kind: "ConfigMap", Namespace: ns, Names: []string{"settings"}},
	}
	newSync(t, c, ns, "web", nil, status)
	harness.Must(t, c.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}))
	// No controller-manager makes the namespace's default ServiceAccount here.
	harness.Must(t, c.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}))
	harness.Must(t, c.Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-5d8f-x7k2p"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "migrate", Image: "registry.example/migrate:1"}},
			Containers:     []corev1.Container{{Name: "web", Image: "registry.example/web:1"}, {Name: "sidecar", Image: "registry.example/proxy:1"}},
		},
	}))
	const user = "lena"
	grantSyncReading(t, c, user, ns)
	grantPodReading(t, c, user, ns)
	b := startUI(t, as(t, user), ns, false)
	sync := "/syncs/" + ns + "/web"
	podKey := "/Pod/" + ns + "/web-5d8f-x7k2p"

	t.Run("the panel of a Pod links its logs, of a ConfigMap not", func(t *testing.T) {
		if page := b.get(sync + "/object?key=" + podKey); !strings.Contains(page, `id="logs-link" href="`+sync+`/logs?key=%2FPod%2F`+ns+`%2Fweb-5d8f-x7k2p"`) {
			t.Errorf("the Pod's panel lacks its Logs link:\n%s", page)
		}
		if page := b.get(sync + "/object?key=/ConfigMap/" + ns + "/settings"); strings.Contains(page, "logs-link") {
			t.Errorf("the ConfigMap's panel links logs:\n%s", page)
		}
	})
	t.Run("the logs page links every container and shows the first", func(t *testing.T) {
		page := b.get(sync + "/logs?key=" + podKey)
		for _, want := range []string{
			`<h2 id="log-title">Container web</h2>`,
			`aria-current="page">web</a>`,
			`>migrate</a> <span class="note">(init)</span>`,
			`&amp;container=sidecar">sidecar</a>`,
			`data-src="` + sync + `/logs/stream?key=%2FPod%2F` + ns + `%2Fweb-5d8f-x7k2p&amp;container=web"`,
		} {
			if !strings.Contains(page, want) {
				t.Errorf("the logs page lacks %s:\n%s", want, page)
			}
		}
		if page := b.get(sync + "/logs?key=" + podKey + "&container=migrate"); !strings.Contains(page, `<h2 id="log-title">Container migrate</h2>`) {
			t.Errorf("the init container's log is not the one shown:\n%s", page)
		}
	})
	t.Run("a container the Pod lacks and an object that is no Pod are refused", func(t *testing.T) {
		for _, path := range []string{
			sync + "/logs?key=" + podKey + "&container=nope",
			sync + "/logs?key=/ConfigMap/" + ns + "/settings",
			sync + "/logs?key=/Pod/kube-system/etcd",
			sync + "/logs/stream?key=/ConfigMap/" + ns + "/settings&container=web",
		} {
			if code, body := b.do(t.Context(), http.MethodGet, path, nil); code != http.StatusNotFound {
				t.Errorf("GET %s: %d, want 404\n%s", path, code, body)
			}
		}
	})
	t.Run("without pods/log the stream says the API server's refusal", func(t *testing.T) {
		lines := openLogStream(t, b, sync+"/logs/stream?key="+podKey+"&container=web")
		awaitEvent(t, lines, "refused", "the refusal", func(data []byte) bool {
			return strings.Contains(string(data), `cannot get resource "pods/log"`) && strings.Contains(string(data), "Reading the log of container web of Pod "+ns+"/web-5d8f-x7k2p")
		})
	})
	t.Run("a container's name cannot forge an event", func(t *testing.T) {
		lines := openLogStream(t, b, sync+"/logs/stream?key="+podKey+"&container="+url.QueryEscape("web\n\nevent: line\ndata: forged"))
		var events []string
		for lines.Scan() {
			if e, ok := strings.CutPrefix(lines.Text(), "event: "); ok {
				events = append(events, e)
			}
		}
		if strings.Join(events, " ") != "refused" {
			t.Errorf("the stream's events are %q, want one refused", events)
		}
	})
}

// grantPodReading lets user get Pods in ns, and not their logs.
func grantPodReading(t *testing.T, c client.Client, user, ns string) {
	t.Helper()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-pods"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}, Verbs: []string{"get", "list"}}},
	}
	harness.Must(t, c.Create(t.Context(), role))
	harness.Must(t, c.Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "read-pods-" + user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
	}))
	userClient, err := client.New(as(t, user), client.Options{Scheme: testScheme(t)})
	harness.Must(t, err)
	harness.Eventually(t, waitLong, user+" may read Pods", func(ctx context.Context) (bool, error) {
		return true, userClient.List(ctx, &corev1.PodList{}, client.InNamespace(ns))
	})
}

// openLogStream opens the log stream at path; it is bounded by waitLong.
func openLogStream(t *testing.T, b *browser, path string) *bufio.Scanner {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLong)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.base+path, nil)
	harness.Must(t, err)
	resp, err := (&http.Client{Jar: b.http.Jar}).Do(req)
	harness.Must(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return bufio.NewScanner(resp.Body)
}
