package browser

import (
	"bufio"
	"context"
	"io"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/agentbin"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// run starts the tether binary with args until the test ends, and prints its
// output if the test failed. stdout, if set, receives its standard output (which
// the printed output then lacks).
func run(t *testing.T, name string, stdout io.Writer, args ...string) {
	t.Helper()
	out := &harness.Buffer{}
	cmd := exec.Command(tetherBinary, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if stdout != nil {
		cmd.Stdout = stdout
	}
	harness.Must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		var err error
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("tether %s did not stop within 30s of SIGTERM: %v", name, <-done)
		}
		// controller-runtime warns, with a stack trace, 30 s after its first log
		// line when no logger was set: a command that runs a cache must set one.
		if strings.Contains(out.String(), "log.SetLogger(...) was never called") {
			t.Errorf("tether %s printed controller-runtime's warning of an unset logger", name)
		}
		if t.Failed() {
			t.Logf("tether %s (%v) output:\n%s", name, err, out.String())
		}
	})
}

// startAgent runs `tether controller` against the control plane, with every
// address of its own (other agents and control planes run beside it).
func startAgent(t *testing.T) {
	t.Helper()
	run(t, "controller", nil, "controller",
		"--kubeconfig", controlplane.Shared(t).KubeconfigPath(),
		"--metrics-bind-address", "0",
		"--webhook-bind-address", "0",
		"--health-probe-bind-address", harness.FreeAddr(t),
		"--cache-dir", t.TempDir(),
		"--min-interval", "1s",
	)
}

// startUI runs `tether ui --no-browser` with the kubeconfig and flags given, and
// returns the sign-in URL it prints.
func startUI(t *testing.T, kubeconfig string, flags ...string) string {
	t.Helper()
	r, w := io.Pipe()
	run(t, "ui", w, append([]string{"ui", "--no-browser", "--address", "127.0.0.1:0", "--kubeconfig", kubeconfig}, flags...)...)
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(r)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, r)
	}()
	select {
	case url, ok := <-line:
		if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
			t.Fatalf("tether ui printed %q, want its sign-in URL", url)
		}
		return url
	case <-time.After(waitLong):
		t.Fatal("tether ui printed no URL")
	}
	return ""
}

// signIn opens the URL `tether ui` printed in a tab of its own and waits for the
// fleet page it leads to.
func signIn(t *testing.T, url string) *tab {
	t.Helper()
	tb := newTab(t)
	tb.open(url)
	tb.waitFor("the fleet page is shown", `document.querySelector('h1') && document.querySelector('h1').textContent === 'Syncs'`)
	return tb
}

// base is the UI's address in a sign-in URL: http://127.0.0.1:port.
func base(t *testing.T, signIn string) string {
	u, err := url.Parse(signIn)
	harness.Must(t, err)
	return "http://" + u.Host
}

// newNamespace creates a namespace named prefix-xxxxx (short names read better in
// the screenshots than controlplane.NewNamespace's, which spell the test's name),
// deleted when the test ends.
func newNamespace(t *testing.T, c client.Client, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-", Annotations: map[string]string{"tether.dev/test": t.Name()}}}
	harness.Must(t, c.Create(t.Context(), ns))
	t.Cleanup(func() { _ = c.Delete(context.WithoutCancel(t.Context()), ns) })
	return ns.Name
}

// newClient is the administrator's client, with the Sync CRD installed.
func newClient(t *testing.T) client.Client {
	t.Helper()
	return agentbin.Client(t)
}

// newSync creates a Sync named name in ns of repo's main branch at path,
// polling every two seconds; mutate changes it first.
func newSync(t *testing.T, c client.Client, ns, name string, repo *gitserver.Repo, path string, mutate ...func(*v1alpha1.Sync)) *v1alpha1.Sync {
	t.Helper()
	s := &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SyncSpec{
			Source: v1alpha1.SourceSpec{
				URL: repo.URL(), Ref: v1alpha1.GitRef{Branch: "main"}, Path: path,
				Interval: &metav1.Duration{Duration: 2 * time.Second},
			},
			Destination: v1alpha1.DestinationSpec{Namespace: ns},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	harness.Must(t, c.Create(t.Context(), s))
	return s
}

// noSelfHeal leaves drift reported (status.sync OutOfSync), not corrected.
func noSelfHeal(s *v1alpha1.Sync) { s.Spec.SelfHeal = ptr.To(false) }

// waitForSync waits until the agent has brought s where cond says.
func waitForSync(t *testing.T, c client.Client, s *v1alpha1.Sync, what string, cond func(*v1alpha1.Sync) bool) {
	t.Helper()
	harness.WaitForSync(t, c, s, waitLong, s.Name+" "+what, cond)
}

func isReady(s *v1alpha1.Sync) bool {
	return apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.ReadyCondition) &&
		s.Status.ObservedGeneration == s.Generation
}

func isStalled(s *v1alpha1.Sync) bool {
	return apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.StalledCondition)
}

// grant binds user (a User, or a ServiceAccount "system:serviceaccount:ns:name")
// to the rules in namespace ns, or cluster-wide when ns is "".
func grant(t *testing.T, c client.Client, subject rbacv1.Subject, ns string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "tether-ui-browser-"}, Rules: rules}
	harness.Must(t, c.Create(t.Context(), role))
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}
	var binding client.Object = &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role.Name}, Subjects: []rbacv1.Subject{subject}, RoleRef: ref}
	if ns == "" {
		binding = &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name}, Subjects: []rbacv1.Subject{subject}, RoleRef: ref}
	}
	harness.Must(t, c.Create(t.Context(), binding))
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		_ = c.Delete(ctx, binding)
		_ = c.Delete(ctx, role)
	})
}

// readSyncs are the rights of a person who may look at Syncs and change nothing.
var readSyncs = rbacv1.PolicyRule{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"syncs"}, Verbs: []string{"get", "list", "watch"}}

// serviceAccountKubeconfig creates ServiceAccount name in ns and writes a
// kubeconfig of a token of it whose context's namespace is ns: a person's
// kubeconfig with nothing but RBAC behind it.
func serviceAccountKubeconfig(t *testing.T, c client.Client, ns, name string) string {
	t.Helper()
	harness.Must(t, c.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
	cp := controlplane.Shared(t)
	cs, err := kubernetes.NewForConfig(cp.Config())
	harness.Must(t, err)
	hour := int64(3600)
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	harness.Must(t, err)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: cp.Host(), CertificateAuthorityData: cp.Config().CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: name, Namespace: ns}
	cfg.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	harness.Must(t, clientcmd.WriteToFile(*cfg, path))
	return path
}
