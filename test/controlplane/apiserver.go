package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// serviceCIDR is the cluster's service range: a /16, because tests and benchmarks
// create hundreds of Services and a deleted namespace's Services keep their IPs when
// no namespace controller runs. The pod range kwok hands out (podCIDR) must not
// overlap it.
const serviceCIDR = "10.96.0.0/16"

// startAPIServer starts kube-apiserver on a free loopback port in front of etcd, writes
// the admin kubeconfig and waits for /readyz, which passes once the bootstrap RBAC
// roles, priority levels and system namespaces exist (about 3 s after etcd is up).
func (c *ControlPlane) startAPIServer(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return fmt.Errorf("kube-apiserver: %w", err)
	}
	c.host = fmt.Sprintf("https://127.0.0.1:%d", port)
	c.config = &rest.Config{
		Host: c.host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   c.pki.ca.certPEM,
			CertData: c.pki.admin.certPEM,
			KeyData:  c.pki.admin.keyPEM,
		},
		QPS:   100,
		Burst: 200,
	}
	if c.kubeconfig, err = c.writeKubeconfig("kubeconfig", adminUser, c.pki.admin); err != nil {
		return err
	}
	p, err := c.start("kube-apiserver", c.bins.apiserver, c.apiserverArgs(port))
	if err != nil {
		return err
	}
	return c.waitAPIServer(ctx, p, "kube-apiserver /readyz")
}

// waitAPIServer waits until the kube-apiserver p answers /readyz.
func (c *ControlPlane) waitAPIServer(ctx context.Context, p *process, what string) error {
	client, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return fmt.Errorf("kube-apiserver: %w", err)
	}
	return c.waitReady(ctx, p, what, func(ctx context.Context) error {
		_, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	})
}

func (c *ControlPlane) apiserverArgs(port int) []string {
	pki := c.pki
	return []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		// The advertise address is what the "kubernetes" service would point at; with a
		// loopback address that endpoint is invalid, so the reconciler that maintains it
		// is off. In-cluster clients are not part of these tests.
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--cert-dir=" + filepath.Join(c.dir, "kube-apiserver"),
		"--tls-cert-file=" + pki.serving.certFile,
		"--tls-private-key-file=" + pki.serving.keyFile,
		"--client-ca-file=" + pki.ca.certFile,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pki.serviceAcct.keyFile,
		"--service-account-signing-key-file=" + pki.serviceAcct.keyFile,
		// The front-proxy (aggregation) flags. The apiserver publishes the request-header
		// CA in kube-system/extension-apiserver-authentication; without it the
		// controller-manager and scheduler, which authenticate their own /healthz and
		// /metrics callers against that ConfigMap, log an error every second.
		"--requestheader-client-ca-file=" + pki.frontProxyCA.certFile,
		"--requestheader-allowed-names=" + frontProxyClientUser,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + pki.frontProxy.certFile,
		"--proxy-client-key-file=" + pki.frontProxy.keyFile,
		"--allow-privileged=true",
		// The kubelet's API (a pod's logs) is kwok's, on the fake node's InternalIP
		// (loopback), with a serving certificate of the cluster CA; the node's
		// Hostname names no host.
		"--kubelet-certificate-authority=" + pki.ca.certFile,
		"--kubelet-preferred-address-types=InternalIP",
		"--profiling=" + strconv.FormatBool(os.Getenv(ProfilingEnv) != ""),
	}
}

// ProfilingEnv names the environment variable that, when set, turns on
// kube-apiserver's /debug/pprof (off otherwise, as in a hardened cluster): for a
// benchmark that profiles what the API server spends its CPU on.
const ProfilingEnv = "TETHER_APISERVER_PROFILING"
