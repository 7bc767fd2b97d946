package main

import (
	"bufio"
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
)

// TestUIPrintsItsURLAndServesIt: tether ui prints one line, the URL to open,
// which starts with http:// and signs a browser in.
func TestUIPrintsItsURLAndServesIt(t *testing.T) {
	cp := controlplane.Shared(t)
	controlplane.InstallCRDs(t, cp.Config(), "../../deploy/base/crd")
	url := startTetherUI(t, cp.KubeconfigPath())
	if !strings.Contains(url, "/login?token=") {
		t.Errorf("tether ui printed %q, want the URL with its one-time token", url)
	}
	resp := getUI(t, newUIClient(t), url)
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Errorf("opening the URL: %d with cookies %v, want 303 and the session", resp.StatusCode, resp.Cookies())
	}
}

// startTetherUI runs tether ui with kubeconfig until the test ends, and
// returns the URL it printed.
func startTetherUI(t *testing.T, kubeconfig string, flags ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	out, stdout := io.Pipe()
	var errOut strings.Builder
	ended := make(chan error, 1)
	go func() {
		ended <- run(ctx, append([]string{"ui", "--no-browser", "--address", "127.0.0.1:0", "--kubeconfig", kubeconfig}, flags...), stdout, &errOut)
		_ = stdout.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-ended; err != nil {
			t.Errorf("tether ui: %v\n%s", err, errOut.String())
		}
	})
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatalf("tether ui printed nothing: %v\n%s", lines.Err(), errOut.String())
	}
	url := lines.Text()
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.Contains(url, "/login") {
		t.Fatalf("tether ui printed %q, want the URL with its one-time token", url)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return url
}

// newUIClient is a browser that keeps cookies and follows no redirect.
func newUIClient(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 2 * time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// getUI gets url; the body is read and closed.
func getUI(t *testing.T, c *http.Client, url string) *uiResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &uiResponse{Response: resp, body: string(body)}
}

type uiResponse struct {
	*http.Response
	body string
}

// The diff page of tether ui shows what tether diff prints, through the same
// renderer (git fetched, the Sync's Secrets read as the user) and the same
// mapping, a Secret's values masked.
func TestUIDiffShowsWhatTetherDiffPrints(t *testing.T) {
	e := newDiffEnv(t)
	repo := gitserver.NewLocalRepo(t, "app")
	repo.Commit(t, map[string]string{
		"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {password: git-password-0815}\n",
		"cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {colour: green, size: large}\n",
	}, "Paint it green")
	e.applyObjects(t,
		decode(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {password: live-password-4711}\n"),
		decode(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {colour: blue, size: large}\n"))
	c := e.syncClient(t)
	s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "app"}}
	s.Spec.Source.URL, s.Spec.Source.Ref.Branch, s.Spec.Destination.Namespace = repo.URL(), repo.Branch(), e.ns
	if err := c.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	plan.SetInventory(&s.Status, []v1alpha1.ObjectRef{
		{Version: "v1", Kind: "Secret", Namespace: e.ns, Name: "creds"},
		{Version: "v1", Kind: "ConfigMap", Namespace: e.ns, Name: "web"},
	})
	for _, kind := range []string{"Secret", "ConfigMap"} {
		name := map[string]string{"Secret": "creds", "ConfigMap": "web"}[kind]
		s.Status.Resources = append(s.Status.Resources, v1alpha1.ResourceStatus{
			ObjectRef: v1alpha1.ObjectRef{Version: "v1", Kind: kind, Namespace: e.ns, Name: name}, Sync: v1alpha1.SyncStatusOutOfSync,
		})
	}
	if err := c.Status().Update(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	cli, _, code := e.diff(t, "app", "-n", e.ns, "--use-secret-ref")
	if code != 1 {
		t.Fatalf("tether diff exits %d, want 1 (differs):\n%s", code, cli)
	}

	login := startTetherUI(t, e.kubeconfig)
	browser := newUIClient(t)
	getUI(t, browser, login)
	base, _, _ := strings.Cut(login, "/login")
	page := getUI(t, browser, base+"/syncs/"+e.ns+"/app/diff")
	if page.StatusCode != http.StatusOK {
		t.Fatalf("the diff page: %d\n%s", page.StatusCode, page.body)
	}
	shown := map[string]bool{}
	for _, m := range diffLine.FindAllStringSubmatch(page.body, -1) {
		shown[html.UnescapeString(m[1])] = true
	}
	changed := 0
	for _, l := range strings.Split(cli, "\n") {
		if (strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-")) && !strings.HasPrefix(l, "diff ") {
			changed++
			if !shown[l] {
				t.Errorf("tether diff prints %q; the UI's diff page does not show it:\n%s", l, page.body)
			}
		}
	}
	if changed < 4 {
		t.Errorf("tether diff printed %d changed lines, want the Secret's and the ConfigMap's:\n%s", changed, cli)
	}
	for _, want := range []string{"+  colour: green", "+  password: '*** (changed)'"} {
		if !shown[want] {
			t.Errorf("the diff page lacks %q:\n%s", want, page.body)
		}
	}
	for _, secret := range []string{"live-password-4711", "git-password-0815", "bGl2ZS1wYXNzd29yZC00NzEx", "Z2l0LXBhc3N3b3JkLTA4MTU="} {
		if strings.Contains(page.body, secret) {
			t.Errorf("the diff page holds the Secret's value %q", secret)
		}
	}
}

// diffLine finds the text of each line of a diff page's diffs.
var diffLine = regexp.MustCompile(`<span class="line[^"]*">([^<]*)</span>`)

// tether ui --in-cluster serves the sign-in form, with no credentials of its
// own (the kubeconfig names the API server only), and refuses to render a
// Sync's file:// URL, which would read the server's own files.
func TestUIInClusterServesTheSignInForm(t *testing.T) {
	cp := controlplane.Shared(t)
	controlplane.InstallCRDs(t, cp.Config(), "../../deploy/base/crd")
	url := startTetherUI(t, cp.KubeconfigPath(), "--in-cluster")
	if !strings.HasSuffix(url, "/login") {
		t.Errorf("tether ui --in-cluster printed %q, want its sign-in page", url)
	}
	page := getUI(t, newUIClient(t), url)
	if page.StatusCode != http.StatusOK || !strings.Contains(page.body, `name="token"`) {
		t.Errorf("the sign-in page: %d\n%s", page.StatusCode, page.body)
	}
	s := &v1alpha1.Sync{}
	s.Spec.Source.URL = "FILE:///etc"
	if _, err := renderInCluster(t.Context(), nil, nil, s); err == nil || !strings.Contains(err.Error(), "file:// URL refused") {
		t.Errorf("rendering a file:// URL in a cluster: %v, want a refusal", err)
	}
}

func TestUIServesOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:9000", ":9000", "192.0.2.1:9000", "example.com:9000"} {
		var out, errOut strings.Builder
		err := run(t.Context(), []string{"ui", "--no-browser", "--address", addr}, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("tether ui --address %s: %v, want a refusal naming loopback", addr, err)
		}
	}
}
