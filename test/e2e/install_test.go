package e2e

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/test/controlplane"
)

// The agent's identity in every install of deploy/.
const (
	agentNamespace = "tether-system"
	agentAccount   = "tether"
)

// install is one of the single-file installs in deploy/ (install.yaml, the default;
// namespaced.yaml, the multi-tenant overlay), which make generate renders from the
// kustomizations and make verify keeps current, applied to the shared control
// plane with server-side apply as docs/install.md says.
type install struct {
	objects []*unstructured.Unstructured
}

// applyInstall applies deploy/<file>, and removes what it applied (but the CRD and
// the tether-system namespace, which other tests use) when t ends, so that one
// install's rights never leak into another test.
func applyInstall(t *testing.T, file string) *install {
	t.Helper()
	path := filepath.Join("..", "..", "deploy", file)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rendered := string(data)
	kubectl(t, "apply", "--server-side", "--force-conflicts", "--field-manager=e2e-install", "-f", path)
	// A Lease left by an earlier agent would spare this one creating it.
	kubectl(t, "-n", agentNamespace, "delete", "lease", "tether.dev", "--ignore-not-found")
	in := &install{}
	var cleanup []string
	for _, doc := range strings.Split(rendered, "\n---\n")[1:] { // [0] is the header
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			t.Fatalf("reading the rendered install: %v", err)
		}
		if obj.Object == nil {
			continue
		}
		in.objects = append(in.objects, obj)
		if obj.GetKind() != "CustomResourceDefinition" && obj.GetKind() != "Namespace" {
			cleanup = append(cleanup, doc)
		}
	}
	t.Cleanup(func() {
		file := filepath.Join(os.TempDir(), fmt.Sprintf("tether-e2e-uninstall-%d.yaml", os.Getpid()))
		defer os.Remove(file)
		if err := os.WriteFile(file, []byte(strings.Join(cleanup, "\n---\n")), 0o600); err == nil {
			kubectlNoFail(t, "delete", "--ignore-not-found", "--wait=false", "-f", file)
		}
	})
	return in
}

// agentArgs returns the arguments the install's Deployment gives the agent, but
// those about addresses and directories of the pod, which the test sets itself.
func (in *install) agentArgs(t *testing.T) []string {
	t.Helper()
	for _, obj := range in.objects {
		if obj.GetKind() == "Deployment" && obj.GetName() == "tether" {
			return deploymentArgs(obj, agentNamespace)
		}
	}
	t.Fatal("the install has no Deployment tether")
	return nil
}

// deploymentArgs returns the arguments a rendered Deployment gives the agent, but
// those about addresses and directories of the pod, which the test sets itself, and
// --metrics-secure: the tests scrape the agent's metrics on a loopback address, in
// plain HTTP (cmd/tether's TestSecureMetrics shows the secure serving); the pod's
// namespace is namespace.
func deploymentArgs(obj *unstructured.Unstructured, namespace string) []string {
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	var out []string
	for _, arg := range args[1:] { // args[0] is the subcommand
		if slices.ContainsFunc([]string{"--metrics-bind-address", "--health-probe-bind-address", "--webhook-secrets-dir", "--cache-dir"}, func(p string) bool { return strings.HasPrefix(arg, p+"=") }) {
			continue
		}
		if arg == "--metrics-secure" || strings.HasPrefix(arg, "--metrics-secure=") {
			continue
		}
		out = append(out, strings.ReplaceAll(arg, "$(POD_NAMESPACE)", namespace))
	}
	return out
}

// agentRule is one verb of one rule granted to the agent, where it holds.
type agentRule struct {
	binding   string // "ClusterRoleBinding/x" or "RoleBinding/ns/x"
	namespace string // empty: cluster-wide
	group     string
	resource  string
	verb      string
}

func (r agentRule) String() string {
	return fmt.Sprintf("%s: %s %s.%s", r.binding, r.verb, r.resource, r.group)
}

// agentRules lists every verb of every rule that the install's bindings grant the
// agent's account.
func (in *install) agentRules(t *testing.T) []agentRule {
	t.Helper()
	roles := map[string][]rbacv1.PolicyRule{} // "ClusterRole/x" or "Role/ns/x"
	for _, obj := range in.objects {
		switch obj.GetKind() {
		case "ClusterRole", "Role":
			role := &rbacv1.ClusterRole{}
			fromUnstructured(t, obj, role)
			roles[roleKey(obj.GetKind(), obj.GetNamespace(), obj.GetName())] = role.Rules
		}
	}
	var out []agentRule
	for _, obj := range in.objects {
		if obj.GetKind() != "ClusterRoleBinding" && obj.GetKind() != "RoleBinding" {
			continue
		}
		binding := &rbacv1.RoleBinding{}
		fromUnstructured(t, obj, binding)
		if !slices.ContainsFunc(binding.Subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Namespace == agentNamespace && s.Name == agentAccount
		}) {
			continue
		}
		roleNS := ""
		if binding.RoleRef.Kind == "Role" {
			roleNS = obj.GetNamespace()
		}
		rules, ok := roles[roleKey(binding.RoleRef.Kind, roleNS, binding.RoleRef.Name)]
		if !ok {
			t.Errorf("%s/%s binds %s %s, which the install does not hold", obj.GetKind(), obj.GetName(), binding.RoleRef.Kind, binding.RoleRef.Name)
		}
		name := strings.Trim(obj.GetKind()+"/"+obj.GetNamespace()+"/"+obj.GetName(), "/")
		name = strings.ReplaceAll(name, "//", "/")
		for _, rule := range rules {
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, v := range rule.Verbs {
						out = append(out, agentRule{binding: name, namespace: obj.GetNamespace(), group: g, resource: res, verb: v})
					}
				}
			}
		}
	}
	return out
}

func roleKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

func fromUnstructured(t *testing.T, obj *unstructured.Unstructured, into any) {
	t.Helper()
	data, err := obj.MarshalJSON()
	if err == nil {
		err = yaml.Unmarshal(data, into)
	}
	if err != nil {
		t.Fatalf("reading %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// agentKubeconfig writes a kubeconfig that authenticates as the install's own
// ServiceAccount with a token from the TokenRequest API, as a pod of the Deployment
// would: no certificate, no system:masters, nothing but the account's RBAC. Its
// server is the auditing proxy.
func agentKubeconfig(t *testing.T, aud *auditor) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(controlplane.Shared(t).Config())
	if err != nil {
		t.Fatal(err)
	}
	hour := int64(3600)
	tok, err := cs.CoreV1().ServiceAccounts(agentNamespace).CreateToken(t.Context(), agentAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token of %s/%s: %v", agentNamespace, agentAccount, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: aud.URL(), CertificateAuthorityData: aud.CA()}
	cfg.AuthInfos["tether"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "tether"}
	cfg.CurrentContext = "e2e"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// apiRequest is one request the agent made, as RBAC sees it.
type apiRequest struct {
	verb, group, resource, namespace, name string
	// as is the user the request impersonated; empty when the agent acted as itself.
	as     string
	status int
	path   string
	// at is when the API server's answer began.
	at time.Time
	// dryRun: the request wrote nothing (?dryRun=All).
	dryRun bool
	// priorityLevel is the UID of the API Priority and Fairness level the API
	// server classified the request under (its X-Kubernetes-PF-PriorityLevel-UID).
	priorityLevel string
}

// auditor is a reverse proxy between the agent and the API server that records
// every request, so a test can say which of the agent's rights it used and whether
// any request of its own was refused. It holds no credentials: each request goes on
// with the agent's own token.
type auditor struct {
	srv *httptest.Server
	mu  gosync.Mutex
	log []apiRequest
}

func startAuditor(t *testing.T) *auditor {
	t.Helper()
	cp := controlplane.Shared(t)
	admin := cp.Config()
	target, err := url.Parse(cp.Host())
	if err != nil {
		t.Fatal(err)
	}
	// Trust the API server's CA, and present nothing.
	transport, err := rest.TransportFor(&rest.Config{Host: cp.Host(), TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData, CAFile: admin.CAFile}})
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	proxy.FlushInterval = -1 // watches stream
	proxy.ErrorLog = nil
	a := &auditor{}
	// TLS: client-go sends no credentials to a plain-HTTP server.
	a.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxy.ServeHTTP(&statusWriter{ResponseWriter: w, onHeader: func(code int) {
			a.record(r, code, w.Header().Get(priorityLevelHeader))
		}}, r)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *auditor) URL() string { return a.srv.URL }

// CA is the PEM certificate a client of the proxy must trust.
func (a *auditor) CA() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.srv.Certificate().Raw})
}

func (a *auditor) record(r *http.Request, status int, priorityLevel string) {
	req, ok := parseRequest(r)
	if !ok {
		return
	}
	req.status, req.at, req.priorityLevel = status, time.Now(), priorityLevel
	a.mu.Lock()
	defer a.mu.Unlock()
	a.log = append(a.log, req)
	if req.as != "" {
		// Acting as an account is a request of the agent's own: impersonate
		// serviceaccounts in the account's namespace.
		ns, name, _ := strings.Cut(strings.TrimPrefix(req.as, "system:serviceaccount:"), ":")
		a.log = append(a.log, apiRequest{verb: "impersonate", resource: "serviceaccounts", namespace: ns, name: name, status: status, path: r.URL.Path, at: req.at})
	}
}

// requests returns what the proxy saw so far.
func (a *auditor) requests() []apiRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.log)
}

// first returns the first request that match accepts, and whether there is one.
func (a *auditor) first(match func(apiRequest) bool) (apiRequest, bool) {
	for _, r := range a.requests() {
		if match(r) {
			return r, true
		}
	}
	return apiRequest{}, false
}

// count is how many requests match accepts.
func (a *auditor) count(match func(apiRequest) bool) int {
	n := 0
	for _, r := range a.requests() {
		if match(r) {
			n++
		}
	}
	return n
}

// refusedOwn returns the agent's own requests (not as another account) that the API
// server refused with 403.
func (a *auditor) refusedOwn() []apiRequest {
	var out []apiRequest
	for _, r := range a.requests() {
		if r.as == "" && r.verb != "impersonate" && r.status == http.StatusForbidden {
			out = append(out, r)
		}
	}
	return out
}

// unused returns the rules no request of the agent's own exercised.
func (a *auditor) unused(rules []agentRule) []agentRule {
	reqs := a.requests()
	var out []agentRule
	for _, rule := range rules {
		if !slices.ContainsFunc(reqs, func(r apiRequest) bool { return r.as == "" && rule.allows(r) }) {
			out = append(out, rule)
		}
	}
	return out
}

func (r agentRule) allows(req apiRequest) bool {
	match := func(pattern, v string) bool { return pattern == "*" || pattern == v }
	return match(r.verb, req.verb) && match(r.group, req.group) && match(r.resource, req.resource) &&
		(r.namespace == "" || r.namespace == req.namespace)
}

// parseRequest reads RBAC's view of a resource request: verb, group, resource (with
// subresource), namespace and name. Discovery and other non-resource requests are
// not rules of any role here and are left out.
func parseRequest(r *http.Request) (apiRequest, bool) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var rest []string
	req := apiRequest{as: r.Header.Get("Impersonate-User"), path: r.URL.Path, dryRun: r.URL.Query().Has("dryRun")}
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		req.group, rest = parts[1], parts[3:]
	default:
		return req, false
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		req.namespace, rest = rest[1], rest[2:]
	} else if len(rest) == 2 && rest[0] == "namespaces" {
		req.name, rest = rest[1], rest[:1]
	}
	if len(rest) == 0 {
		return req, false
	}
	req.resource = rest[0]
	if len(rest) >= 2 {
		req.name = rest[1]
	}
	if len(rest) >= 3 {
		req.resource += "/" + rest[2]
	}
	watch := r.URL.Query().Get("watch")
	switch r.Method {
	case http.MethodGet:
		switch {
		case watch == "true" || watch == "1":
			req.verb = "watch"
		case req.name == "":
			req.verb = "list"
		default:
			req.verb = "get"
		}
	case http.MethodPost:
		req.verb = "create"
	case http.MethodPut:
		req.verb = "update"
	case http.MethodPatch:
		req.verb = "patch"
	case http.MethodDelete:
		req.verb = "delete"
	default:
		return req, false
	}
	return req, true
}

// statusWriter calls onHeader with the status code, once, when the response starts.
type statusWriter struct {
	http.ResponseWriter
	onHeader func(int)
	once     gosync.Once
}

func (w *statusWriter) WriteHeader(code int) {
	w.once.Do(func() { w.onHeader(code) })
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { w.onHeader(http.StatusOK) })
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// kubectlNoFail runs kubectl for a cleanup, where failing the test is too late.
func kubectlNoFail(t *testing.T, args ...string) {
	cp := controlplane.Shared(t)
	bin, err := controlplane.BinDir()
	if err != nil {
		return
	}
	cmd := exec.Command(filepath.Join(bin, "kubectl"), append([]string{"--kubeconfig", cp.KubeconfigPath()}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Logf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
}
