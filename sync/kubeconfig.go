package sync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
)

// RESTConfigOf builds the config of the cluster a kubeconfig names (its current
// context, or its only one) from what the kubeconfig holds inline and nothing
// else: the server, its CA, a bearer token, a client certificate and key, a
// user name and password. A kubeconfig is repository-grade input (a tenant
// writes it): a file it names would be read inside the agent's container (the
// agent's own token among them), so any file reference is refused, as are auth
// provider plugins, impersonation and proxies; a credential plugin (exec) runs
// a program in the agent and is refused unless allowExec. The config is made
// field by field, so nothing else of the kubeconfig reaches it.
func RESTConfigOf(data []byte, allowExec bool) (*rest.Config, error) {
	kc, ctx, cluster, err := contextOf(data)
	if err != nil {
		return nil, err
	}
	user := kc.AuthInfos[ctx.AuthInfo]
	if user == nil {
		user = clientcmdapi.NewAuthInfo()
	}
	if err := inlineOnly(cluster, user, allowExec); err != nil {
		return nil, err
	}
	u, err := url.Parse(cluster.Server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("cluster %s's server must be an https:// URL", ctx.Cluster)
	}
	cfg := &rest.Config{
		Host:        cluster.Server,
		BearerToken: user.Token,
		Username:    user.Username,
		Password:    user.Password,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure:   cluster.InsecureSkipTLSVerify,
			ServerName: cluster.TLSServerName,
			CAData:     cluster.CertificateAuthorityData,
			CertData:   user.ClientCertificateData,
			KeyData:    user.ClientKeyData,
		},
	}
	if user.Exec != nil {
		cfg.ExecProvider = user.Exec.DeepCopy()
	}
	return cfg, nil
}

// inlineOnly refuses what a kubeconfig may name outside itself.
func inlineOnly(cluster *clientcmdapi.Cluster, user *clientcmdapi.AuthInfo, allowExec bool) error {
	var refused []string
	for what, v := range map[string]string{
		"certificate-authority": cluster.CertificateAuthority,
		"proxy-url":             cluster.ProxyURL,
		"client-certificate":    user.ClientCertificate,
		"client-key":            user.ClientKey,
		"tokenFile":             user.TokenFile,
		"as":                    user.Impersonate,
		"as-uid":                user.ImpersonateUID,
	} {
		if v != "" {
			refused = append(refused, what)
		}
	}
	if len(user.ImpersonateGroups) > 0 || len(user.ImpersonateUserExtra) > 0 {
		refused = append(refused, "as-groups")
	}
	if user.AuthProvider != nil {
		refused = append(refused, "auth-provider")
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		return fmt.Errorf("it uses %s: only inline credentials are used (certificate-authority-data, client-certificate-data, client-key-data, token, username and password)", strings.Join(refused, ", "))
	}
	if user.Exec != nil && !allowExec {
		return errors.New("its user runs a credential plugin (exec), which runs a program inside the agent: the agent runs without --allow-kubeconfig-exec")
	}
	return nil
}

// kubeConfigKeys are the keys a kubeconfig is looked for under in a Secret: key,
// or, when it is empty, "value" then "value.yaml" (Flux's keys).
func kubeConfigKeys(key string) []string {
	if key != "" {
		return []string{key}
	}
	return []string{v1alpha1.ClusterKubeConfigKey, v1alpha1.ClusterKubeConfigKey + ".yaml"}
}

// ReadKubeConfig reads the kubeconfig in the Secret namespace/name through r,
// under key (kubeConfigKeys): what `tether diff` compares a remote Sync with.
func ReadKubeConfig(ctx context.Context, r client.Reader, namespace, name, key string) ([]byte, error) {
	secret := &corev1.Secret{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		return nil, fmt.Errorf("reading its kubeconfig Secret %s/%s: %w", namespace, name, err)
	}
	keys := kubeConfigKeys(key)
	for _, k := range keys {
		if data, ok := secret.Data[k]; ok {
			return data, nil
		}
	}
	return nil, fmt.Errorf("its kubeconfig Secret %s/%s has no key %s", namespace, name, strings.Join(keys, " or "))
}

// serverOf is the API server URL of a kubeconfig's current context (or only
// one), "" when it names none: a parameter, never a way in.
func serverOf(data []byte) string {
	if _, _, cluster, err := contextOf(data); err == nil {
		return cluster.Server
	}
	return ""
}

// contextOf parses a kubeconfig and returns the context it uses (its current
// one, or its only one) and that context's cluster.
func contextOf(data []byte) (*clientcmdapi.Config, *clientcmdapi.Context, *clientcmdapi.Cluster, error) {
	kc, err := clientcmd.Load(data)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("it does not parse: %w", err)
	}
	name := kc.CurrentContext
	if name == "" && len(kc.Contexts) == 1 {
		for n := range kc.Contexts {
			name = n
		}
	}
	ctx, ok := kc.Contexts[name]
	if !ok {
		return nil, nil, nil, fmt.Errorf("it has no current context, and not exactly one context (%s)", strings.Join(slices.Sorted(maps.Keys(kc.Contexts)), ", "))
	}
	cluster, ok := kc.Clusters[ctx.Cluster]
	if !ok {
		return nil, nil, nil, fmt.Errorf("context %s names cluster %q, which it does not hold", name, ctx.Cluster)
	}
	return kc, ctx, cluster, nil
}
