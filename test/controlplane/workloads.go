package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	// podCIDR is the range kwok takes pod IPs from; kwok's default is 10.0.0.0/24,
	// which would collide with serviceCIDR.
	podCIDR = "10.244.0.0/16"
	// fakeNodeIP is the fake node's InternalIP, which kwok also reports as the hostIP
	// of its pods. kube-apiserver dials it (at the node's kubelet port, where kwok
	// serves the kubelet's API) for a pod's logs: see podlogs.go.
	fakeNodeIP = "127.0.0.1"

	// FakeNodeName names the one node pods are scheduled to when Options.Workloads is
	// set.
	FakeNodeName = "kwok-node-0"
	// kwokNodeAnnotation marks the nodes kwok plays the kubelet for; kwok is told to
	// manage only nodes that carry it, so it never touches a node a test creates.
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
)

// startWorkloads starts the components that turn a Deployment into ready pods: the
// controller-manager (Deployment → ReplicaSet → Pods, garbage collection, namespace
// deletion, service accounts), the scheduler (Pod → node) and kwok (node and pod
// status, instead of a kubelet), then registers the fake node. The three start in
// parallel; Start waits until each one demonstrably works, not merely listens.
func (c *ControlPlane) startWorkloads(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return fmt.Errorf("workload components: %w", err)
	}
	kcm, kcmPort, err := c.startControllerManager()
	if err != nil {
		return err
	}
	scheduler, schedulerPort, err := c.startScheduler()
	if err != nil {
		return err
	}
	// kwok reads its Logs objects from the start: their CRD must be served first.
	if err := installKwokLogsCRD(ctx, c.config); err != nil {
		return err
	}
	kwok, err := c.startKwok()
	if err != nil {
		return err
	}
	if err := createFakeNode(ctx, client); err != nil {
		return err
	}
	if err := c.waitReady(ctx, kcm, "kube-controller-manager /healthz", c.healthz(kcmPort)); err != nil {
		return err
	}
	if err := c.waitReady(ctx, scheduler, "kube-scheduler /healthz", c.healthz(schedulerPort)); err != nil {
		return err
	}
	// The service-account controller creating default/default proves the
	// controller-manager's controllers run (with their own service-account
	// credentials), not only its health endpoint; pods cannot be created in a namespace
	// before its default service account exists.
	if err := c.waitReady(ctx, kcm, "the default service account", func(ctx context.Context) error {
		_, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		return err
	}
	return c.waitReady(ctx, kwok, "node "+FakeNodeName+" to be Ready", func(ctx context.Context) error {
		return nodeReady(ctx, client, FakeNodeName)
	})
}

func (c *ControlPlane) startControllerManager() (*process, int, error) {
	return c.startComponent("kube-controller-manager", c.bins.controllerManager, controllerManagerUser, c.pki.controllerManager,
		// The default client limits (20 QPS) make the controller-manager start its
		// controllers one every 150 ms, as each fetches a service-account token: 4 s
		// of every start. Raised, they all run within half a second.
		"--kube-api-qps=100",
		"--kube-api-burst=200",
		// Each controller runs as its own service account, as in kubeadm clusters, so
		// the controller-manager's own identity needs no more than its bootstrap role.
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+c.pki.serviceAcct.keyFile,
		"--root-ca-file="+c.pki.ca.certFile,
		// Every controller on by default. The cloud ones are not among them, and with no
		// --allocate-node-cidrs the node IPAM controller does nothing.
		"--controllers=*",
	)
}

func (c *ControlPlane) startScheduler() (*process, int, error) {
	return c.startComponent("kube-scheduler", c.bins.scheduler, schedulerUser, c.pki.scheduler)
}

// startComponent starts a control-plane component that talks to the apiserver as
// user and serves its own secure port on a free loopback port, with the flags every
// such component shares followed by extra.
func (c *ControlPlane) startComponent(name, bin, user string, identity *keyPair, extra ...string) (*process, int, error) {
	port, err := freePort()
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", name, err)
	}
	kubeconfig, err := c.writeKubeconfig(name+".kubeconfig", user, identity)
	if err != nil {
		return nil, 0, err
	}
	p, err := c.start(name, bin, append([]string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--tls-cert-file=" + c.pki.serving.certFile,
		"--tls-private-key-file=" + c.pki.serving.keyFile,
		"--leader-elect=false",
	}, extra...))
	return p, port, err
}

func (c *ControlPlane) startKwok() (*process, error) {
	const name = "kwok"
	kubeconfig, err := c.writeKubeconfig(name+".kubeconfig", kwokUser, c.pki.kwok)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
		"--cidr=" + podCIDR,
		"--node-ip=" + fakeNodeIP,
		// kwok renews the fake node's Lease (every quarter of it). Without one, the
		// node's only heartbeat is its status, which the heartbeat stage writes every
		// ten minutes: the node lifecycle controller then calls the node NotReady
		// after its grace period (50s) and marks every pod on it not ready, for good.
		"--node-lease-duration-seconds=40",
		// kwok serves the kubelet's API (containerLogs among it) on the node's
		// kubelet port, which it writes into the node's status, over TLS with the
		// serving certificate of 127.0.0.1 that kube-apiserver verifies
		// (--kubelet-certificate-authority). The log of a pod is the file its
		// Logs object names (podlogs.go).
		fmt.Sprintf("--node-port=%d", port),
		fmt.Sprintf("--server-address=127.0.0.1:%d", port),
		"--tls-cert-file=" + c.pki.serving.certFile,
		"--tls-private-key-file=" + c.pki.serving.keyFile,
		"--enable-crds=" + kwokLogsKind,
	}
	stages, err := c.writeStages()
	if err != nil {
		return nil, fmt.Errorf("kwok stages: %w", err)
	}
	for _, stage := range stages {
		args = append(args, "--config="+stage)
	}
	return c.start(name, c.bins.kwok, args)
}

// createFakeNode registers the node kwok plays the kubelet for. It has no taint, so
// pods need no toleration to land on it, and no capacity: kwok's node-initialize stage
// fills in a large one.
func createFakeNode(ctx context.Context, client kubernetes.Interface) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        FakeNodeName,
		Annotations: map[string]string{kwokNodeAnnotation: "fake"},
		Labels: map[string]string{
			corev1.LabelHostname:   FakeNodeName,
			corev1.LabelOSStable:   "linux",
			corev1.LabelArchStable: "amd64",
			"type":                 "kwok",
		},
	}}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating node %s: %w", FakeNodeName, err)
	}
	return nil
}

func nodeReady(ctx context.Context, client kubernetes.Interface, name string) error {
	node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			if cond.Status == corev1.ConditionTrue {
				return nil
			}
			return fmt.Errorf("node %s: Ready is %s: %s", name, cond.Status, cond.Message)
		}
	}
	return fmt.Errorf("node %s: no Ready condition yet", name)
}

// healthz checks a component's /healthz on its secure loopback port, verifying the
// serving certificate the component was given against the cluster CA. /healthz is
// open to anonymous callers, so no client certificate is needed.
func (c *ControlPlane) healthz(port int) func(context.Context) error {
	roots := x509.NewCertPool()
	roots.AddCert(c.pki.ca.cert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}}
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	}
}
