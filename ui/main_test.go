package ui

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"tether.dev/tether/source"
	"time"

	"github.com/go-logr/logr/testr"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// TestMain runs the package's tests against one real kube-apiserver and etcd;
// each test works in namespaces of its own, and starts a UI of its own as the
// user it is about.
func TestMain(m *testing.M) {
	source.ServeRenderWorker()
	os.Exit(controlplane.RunMain(m, controlplane.Options{}))
}

// waitLong bounds waits for the API server and the watch, on a loaded machine.
const waitLong = time.Minute

func testScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	harness.Must(t, clientgoscheme.AddToScheme(s))
	harness.Must(t, v1alpha1.AddToScheme(s))
	return s
}

// admin is a client of the control plane's administrator, with the Sync CRD
// installed.
func admin(t testing.TB) client.Client {
	t.Helper()
	cp := controlplane.Shared(t)
	controlplane.InstallCRDs(t, cp.Config(), "../deploy/base/crd")
	c, err := client.New(cp.Config(), client.Options{Scheme: testScheme(t)})
	harness.Must(t, err)
	return c
}

// as is the administrator's config impersonating user: a request the user may
// not make is refused as it would be for them.
func as(t testing.TB, user string) *rest.Config {
	cfg := rest.CopyConfig(controlplane.Shared(t).Config())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}

// grantSyncReading lets user get, list and watch Syncs: in namespace ns, or in
// every namespace when ns is "".
func grantSyncReading(t *testing.T, c client.Client, user, ns string) {
	t.Helper()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "tether-ui-test-read-syncs"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"syncs"}, Verbs: []string{"get", "list", "watch"}}},
	}
	if err := c.Create(t.Context(), role); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}
	var binding client.Object = &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user}, Subjects: subjects, RoleRef: ref}
	if ns == "" {
		binding = &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tether-ui-test-" + user}, Subjects: subjects, RoleRef: ref}
	}
	harness.Must(t, c.Create(t.Context(), binding))
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(t.Context()), binding) })
	// The API server's authorizer learns of the binding from its own watch.
	userClient, err := client.New(as(t, user), client.Options{Scheme: testScheme(t)})
	harness.Must(t, err)
	harness.Eventually(t, waitLong, user+" may list Syncs", func(ctx context.Context) (bool, error) {
		return true, userClient.List(ctx, &v1alpha1.SyncList{}, client.InNamespace(ns))
	})
}

// newSync creates a Sync named name in ns, changed by mutate first, and sets its
// status to what status gives (as the agent would).
func newSync(t *testing.T, c client.Client, ns, name string, mutate func(*v1alpha1.Sync), status v1alpha1.SyncStatus) *v1alpha1.Sync {
	t.Helper()
	s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	s.Spec.Source.URL = "https://git.example.com/org/deploy.git"
	s.Spec.Source.Ref.Branch = "main"
	if mutate != nil {
		mutate(s)
	}
	harness.Must(t, c.Create(t.Context(), s))
	s.Status = status
	harness.Must(t, c.Status().Update(t.Context(), s))
	return s
}

// readyStatus is the status of a Sync of generation 1 that applied rev and is
// Ready.
func readyStatus(rev, subject string) v1alpha1.SyncStatus {
	const generation = 1 // a Sync just created
	now := metav1.Now()
	return v1alpha1.SyncStatus{
		ObservedGeneration: generation, LastAppliedRevision: rev, LastAppliedTime: &now,
		Sync: v1alpha1.SyncStatusSynced, Health: v1alpha1.HealthHealthy,
		Conditions: []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded,
			Message: "applied " + rev, ObservedGeneration: generation, LastTransitionTime: now}},
		History: []v1alpha1.HistoryEntry{{Revision: rev, AppliedAt: now, Health: v1alpha1.HealthHealthy, Message: subject}},
	}
}

// browser is a signed-in session of a running UI.
type browser struct {
	t    *testing.T
	base string // http://127.0.0.1:port
	http *http.Client
}

// startUI serves a UI as cfg's user (namespace their own, all whether to show
// every namespace they may list) until the test ends, and signs a browser in.
func startUI(t *testing.T, cfg *rest.Config, namespace string, all bool) *browser {
	t.Helper()
	return startUIWith(t, Options{Config: cfg, Namespace: namespace, AllNamespaces: all})
}

// serve serves a UI made with opts on a loopback port until the test ends, and
// returns its sign-in URL.
func serve(t *testing.T, opts Options) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	srv, err := New(ctx, opts)
	harness.Must(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	harness.Must(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv.LoginURL(l.Addr())
}

// startUIWith is startUI with the Options given (the scheme and log are the
// test's).
func startUIWith(t *testing.T, opts Options) *browser {
	t.Helper()
	opts.Scheme, opts.Log = testScheme(t), testr.New(t)
	return newBrowser(t, serve(t, opts))
}

// newBrowser opens login, the URL the server printed, and keeps its cookie. It
// follows no redirect, so that tests see each answer.
func newBrowser(t *testing.T, login string) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	harness.Must(t, err)
	u, err := url.Parse(login)
	harness.Must(t, err)
	b := &browser{t: t, base: "http://" + u.Host, http: &http.Client{
		Jar:           jar,
		Timeout:       waitLong,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	// The server answers once its watch has listed the Syncs; Serve may not have
	// reached Accept yet.
	harness.Eventually(t, waitLong, "the UI signs the browser in", func(ctx context.Context) (bool, error) {
		code, _ := b.do(ctx, http.MethodGet, login, nil)
		return code == http.StatusSeeOther, nil
	})
	return b
}

// do makes a request and returns its status and body.
func (b *browser) do(ctx context.Context, method, target string, form url.Values) (int, string) {
	if strings.HasPrefix(target, "/") {
		target = b.base + target
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.http.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// get fetches a page, which must answer 200.
func (b *browser) get(path string) string {
	b.t.Helper()
	code, body := b.do(b.t.Context(), http.MethodGet, path, nil)
	if code != http.StatusOK {
		b.t.Fatalf("GET %s: %d\n%s", path, code, body)
	}
	return body
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the CSRF token of the forms of a page.
func (b *browser) csrf(page string) string {
	b.t.Helper()
	m := csrfInput.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("no CSRF token in the page:\n%s", page)
	}
	return m[1]
}
