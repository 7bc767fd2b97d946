package main

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	sigsyaml "sigs.k8s.io/yaml"

	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

func TestMetricsAreServedPlainByDefault(t *testing.T) {
	f, err := parseControllerFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if opts := metricsOptions(f); opts.SecureServing || opts.FilterProvider != nil {
		t.Errorf("without --metrics-secure: SecureServing %v, a filter %v; want plain HTTP", opts.SecureServing, opts.FilterProvider != nil)
	}
}

// TestSecureMetrics serves /metrics as the install does (--metrics-secure), acting as
// an account that holds only the install's tether-metrics-auth role, and scrapes it
// as Prometheus would: a scraper without a token, or whose account may not GET
// /metrics, is refused; one bound to the install's tether-metrics-reader reads it.
func TestSecureMetrics(t *testing.T) {
	cfg := controlplane.Shared(t).Config()
	_, agentToken, readerToken, strangerToken := metricsAccounts(t, cfg)

	f, err := parseControllerFlags([]string{"--metrics-secure", "--metrics-bind-address", "127.0.0.1:0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	agentCfg := rest.AnonymousClientConfig(cfg)
	agentCfg.BearerToken = agentToken
	httpClient, err := rest.HTTPClientFor(agentCfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := metricsserver.NewServer(metricsOptions(f), agentCfg, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("metrics server: %v", err)
		}
	})
	addr := ""
	waitUntil(t, "the metrics server to listen", func() bool {
		addr = srv.(interface{ GetBindAddr() string }).GetBindAddr()
		return addr != "" && !strings.HasSuffix(addr, ":0")
	})

	scrape := func(t *testing.T, token string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+addr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		// The certificate is self-signed at start; the token is what is checked.
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // as the ServiceMonitor does
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("scraping: %v", err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	for _, c := range []struct {
		step, token string
		want        int
	}{
		{"a scrape without a token is refused", "", http.StatusUnauthorized},
		{"a scrape with a token the API server does not know is refused", "not-a-token", http.StatusUnauthorized},
		{"a scrape by an account without tether-metrics-reader is refused", strangerToken, http.StatusForbidden},
		{"a scrape by an account bound to tether-metrics-reader reads the metrics", readerToken, http.StatusOK},
	} {
		t.Run(c.step, func(t *testing.T) {
			if got := scrape(t, c.token); got != c.want {
				t.Errorf("status = %d, want %d", got, c.want)
			}
		})
	}
	t.Run("plain HTTP is not served", func(t *testing.T) {
		resp, err := http.Get("http://" + addr + "/metrics") //nolint:noctx // a one-shot probe
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Error("plain HTTP was answered 200")
			}
		}
	})
}

// metricsAccounts makes the accounts a secure scrape involves, in a namespace of
// the test's own, and returns their tokens: the agent, holding only the install's
// tether-metrics-auth role; a scraper bound to tether-metrics-reader; and a stranger
// bound to nothing. It returns once RBAC lets the first two do their part.
func metricsAccounts(t *testing.T, cfg *rest.Config) (ns, agent, reader, stranger string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns = controlplane.NewNamespace(t, cfg)
	agentRole := installRole(t, cs, "metrics_auth_role.yaml")
	readerRole := installRole(t, cs, "metrics_reader_role.yaml")
	agent = accountWith(t, cs, ns, "agent", agentRole)
	reader = accountWith(t, cs, ns, "prometheus", readerRole)
	stranger = accountWith(t, cs, ns, "stranger", "")
	// RBAC takes effect when the API server's informers see the bindings.
	waitAllowed(t, cs, ns, "agent", authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}})
	waitAllowed(t, cs, ns, "prometheus", authorizationv1.SubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/metrics"}})
	return ns, agent, reader, stranger
}

// installRole creates the ClusterRole of deploy/base/rbac/file as the install ships
// it, and returns its name.
func installRole(t *testing.T, cs kubernetes.Interface, file string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "base", "rbac", file))
	if err != nil {
		t.Fatal(err)
	}
	doc, _, _ := strings.Cut(string(data), "\n---\n") // the role; its binding names the install's account
	role := &rbacv1.ClusterRole{}
	if err := sigsyaml.Unmarshal([]byte(doc), role); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return role.Name
}

// accountWith creates ServiceAccount ns/name bound to ClusterRole role (none when
// empty), waits for RBAC to see it, and returns a token of it.
func accountWith(t *testing.T, cs kubernetes.Interface, ns, name, role string) string {
	t.Helper()
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if role != "" {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cs.RbacV1().ClusterRoleBindings().Delete(context.WithoutCancel(t.Context()), binding.Name, metav1.DeleteOptions{})
		})
	}
	hour := int64(3600)
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Status.Token
}

// waitAllowed waits until the API server lets account ns/name do what spec says.
func waitAllowed(t *testing.T, cs kubernetes.Interface, ns, name string, spec authorizationv1.SubjectAccessReviewSpec) {
	t.Helper()
	spec.User = "system:serviceaccount:" + ns + ":" + name
	spec.Groups = []string{"system:serviceaccounts", "system:authenticated"}
	waitUntil(t, "RBAC to allow "+name, func() bool {
		review, err := cs.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
		return err == nil && review.Status.Allowed
	})
}

// waitUntil polls cond until it holds, failing t after a minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	harness.Eventually(t, time.Minute, what, func(context.Context) (bool, error) { return cond(), nil })
}
