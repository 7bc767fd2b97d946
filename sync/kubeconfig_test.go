package sync

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigWith is a kubeconfig of one context whose cluster and user mutate
// changes.
func kubeconfigWith(t *testing.T, mutate func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cluster := &clientcmdapi.Cluster{Server: "https://prod.example.com:6443", CertificateAuthorityData: []byte("ca")}
	user := &clientcmdapi.AuthInfo{Token: "t0ken"}
	if mutate != nil {
		mutate(cluster, user)
	}
	cfg.Clusters["prod"], cfg.AuthInfos["deployer"] = cluster, user
	cfg.Contexts["prod"] = &clientcmdapi.Context{Cluster: "prod", AuthInfo: "deployer"}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestAKubeconfigGivesItsInlineCredentialsOnly(t *testing.T) {
	cfg, err := RESTConfigOf(kubeconfigWith(t, func(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
		u.ClientCertificateData, u.ClientKeyData = []byte("cert"), []byte("key")
		c.TLSServerName = "api.internal"
	}), false)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://prod.example.com:6443" || cfg.BearerToken != "t0ken" || string(cfg.CAData) != "ca" ||
		string(cfg.CertData) != "cert" || string(cfg.KeyData) != "key" || cfg.ServerName != "api.internal" {
		t.Errorf("config %+v does not carry the kubeconfig's inline credentials", cfg)
	}
	if cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" || cfg.BearerTokenFile != "" || cfg.ExecProvider != nil || cfg.AuthProvider != nil {
		t.Errorf("config %+v names something outside the kubeconfig", cfg)
	}
}

func TestAKubeconfigThatReachesOutsideItselfIsRefused(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)
		want   string
	}{
		{"the agent's own token file", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.TokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
		}, "tokenFile"},
		{"a CA file", func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.CertificateAuthority = "/etc/ca.crt" }, "certificate-authority"},
		{"client certificate files", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.ClientCertificate, u.ClientKey = "/tmp/c.crt", "/tmp/c.key"
		}, "client-certificate, client-key"},
		{"a proxy", func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.ProxyURL = "http://10.0.0.1:3128" }, "proxy-url"},
		{"impersonation", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) { u.Impersonate = "admin" }, "as"},
		{"an auth provider", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "gcp"}
		}, "auth-provider"},
		{"a credential plugin", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", APIVersion: "client.authentication.k8s.io/v1"}
		}, "--allow-kubeconfig-exec"},
		{"a plain http server", func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.Server = "http://prod.example.com" }, "https://"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RESTConfigOf(kubeconfigWith(t, tt.mutate), false)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one naming %q", err, tt.want)
			}
		})
	}
}

func TestACredentialPluginRunsOnlyWhenAllowed(t *testing.T) {
	data := kubeconfigWith(t, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
		u.Token = ""
		u.Exec = &clientcmdapi.ExecConfig{Command: "aws", Args: []string{"eks", "get-token"}, APIVersion: "client.authentication.k8s.io/v1"}
	})
	cfg, err := RESTConfigOf(data, true)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ExecProvider == nil || cfg.ExecProvider.Command != "aws" {
		t.Errorf("exec provider %+v, want the kubeconfig's", cfg.ExecProvider)
	}
}

func TestAKubeconfigWithoutAContextToUseIsRefused(t *testing.T) {
	cfg := clientcmdapi.NewConfig()
	for _, n := range []string{"a", "b"} {
		cfg.Clusters[n] = &clientcmdapi.Cluster{Server: "https://" + n + ".example.com"}
		cfg.Contexts[n] = &clientcmdapi.Context{Cluster: n}
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RESTConfigOf(data, false); err == nil || !strings.Contains(err.Error(), "a, b") {
		t.Errorf("error %v, want one naming the contexts a, b", err)
	}
	if _, err := RESTConfigOf([]byte("{not yaml"), false); err == nil || !strings.Contains(err.Error(), "does not parse") {
		t.Errorf("error %v, want one saying it does not parse", err)
	}
}

func TestAllowedNamespaces(t *testing.T) {
	for _, tt := range []struct {
		list, ns string
		want     bool
	}{
		{"*", "web", true},
		{"shop, web", "web", true},
		{"shop,web2", "web", false},
		{"", "web", false},
	} {
		if got := allowsNamespace(tt.list, tt.ns); got != tt.want {
			t.Errorf("allowsNamespace(%q, %q) = %v, want %v", tt.list, tt.ns, got, tt.want)
		}
	}
}
