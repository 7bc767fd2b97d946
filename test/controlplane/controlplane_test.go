package controlplane_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"tether.dev/tether/test/controlplane"
)

// rolloutTimeout bounds waits for controllers; a healthy control plane needs seconds.
const rolloutTimeout = 2 * time.Minute

func TestMain(m *testing.M) {
	os.Exit(controlplane.RunMain(m, controlplane.Options{}))
}

func TestSharedControlPlaneServesTheAPI(t *testing.T) {
	cp := controlplane.Shared(t)
	client := newClient(t, cp.Config())

	t.Run("it reports Kubernetes v1.34.4", func(t *testing.T) {
		v, err := client.Discovery().ServerVersion()
		if err != nil {
			t.Fatalf("server version: %v", err)
		}
		if v.GitVersion != "v1.34.4" {
			t.Errorf("server version = %s, want v1.34.4", v.GitVersion)
		}
	})

	t.Run("a ConfigMap created through Config reads back", func(t *testing.T) {
		ns := controlplane.NewNamespace(t, cp.Config())
		want := map[string]string{"greeting": "hello", "target": "world"}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}, Data: want}
		if _, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating ConfigMap %s/settings: %v", ns, err)
		}
		got, err := client.CoreV1().ConfigMaps(ns).Get(t.Context(), "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading ConfigMap %s/settings: %v", ns, err)
		}
		if diff := cmp.Diff(want, got.Data); diff != "" {
			t.Errorf("ConfigMap data (-want +got):\n%s", diff)
		}
	})

	t.Run("the admin is authenticated by certificate as a cluster admin", func(t *testing.T) {
		review, err := client.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("self subject review: %v", err)
		}
		if u := review.Status.UserInfo; !slices.Contains(u.Groups, "system:masters") {
			t.Errorf("admin user %q has groups %v, want system:masters among them", u.Username, u.Groups)
		}
	})

	t.Run("an anonymous client is not allowed in", func(t *testing.T) {
		anon := rest.AnonymousClientConfig(cp.Config())
		_, err := newClient(t, anon).CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
		if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
			t.Errorf("anonymous list of namespaces: error %v, want forbidden or unauthorized", err)
		}
	})

	t.Run("kubectl works with the kubeconfig file", func(t *testing.T) {
		dir, err := controlplane.BinDir()
		if err != nil {
			t.Fatal(err)
		}
		kubectl := filepath.Join(dir, "kubectl")
		out, err := exec.CommandContext(t.Context(), kubectl, "--kubeconfig", cp.KubeconfigPath(),
			"get", "namespace", "kube-system", "-o", "name").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl get namespace kube-system: %v\n%s", err, out)
		}
		if got := strings.TrimSpace(string(out)); got != "namespace/kube-system" {
			t.Errorf("kubectl printed %q, want namespace/kube-system", got)
		}
	})
}

func TestNewNamespaceGivesEachTestItsOwn(t *testing.T) {
	cfg := controlplane.Shared(t).Config()
	client := newClient(t, cfg)
	var first, second string
	t.Run("first", func(t *testing.T) { first = controlplane.NewNamespace(t, cfg) })
	t.Run("second", func(t *testing.T) { second = controlplane.NewNamespace(t, cfg) })

	if first == second {
		t.Errorf("two tests got the same namespace %s", first)
	}
	if want := "test-newnamespacegiveseachtestitsown-first-"; !strings.HasPrefix(first, want) {
		t.Errorf("namespace %q is not named after its test (want prefix %q)", first, want)
	}
	for _, name := range []string{first, second} {
		ns, err := client.CoreV1().Namespaces().Get(t.Context(), name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			t.Errorf("reading namespace %s: %v", name, err)
		case ns.DeletionTimestamp == nil:
			t.Errorf("namespace %s still exists after its test ended, want it deleted", name)
		}
	}
}

func TestStartWithoutBinariesSaysHowToBuildThem(t *testing.T) {
	t.Setenv(controlplane.BinDirEnv, t.TempDir())
	_, err := controlplane.Start(t.Context(), controlplane.Options{Workloads: true})
	if err == nil {
		t.Fatal("Start succeeded without binaries")
	}
	for _, want := range []string{"make testbin", "etcd", "kube-apiserver", "kwok-stages/pod-ready.yaml"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start error %q does not mention %q", err, want)
		}
	}
}

func TestWorkloadsRollOut(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), rolloutTimeout)
	defer cancel()
	start := time.Now()
	cp, err := controlplane.Start(ctx, controlplane.Options{Workloads: true})
	if err != nil {
		t.Fatalf("starting a control plane with workloads: %v", err)
	}
	t.Logf("control plane with workloads ready in %v", time.Since(start).Round(time.Millisecond))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cp.Stop()
		}
	})
	client := newClient(t, cp.Config())

	t.Run("a Deployment of 2 replicas becomes ready on the fake node", func(t *testing.T) {
		ns := controlplane.NewNamespace(t, cp.Config())
		if _, err := client.AppsV1().Deployments(ns).Create(ctx, deployment("web", 2), metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Deployment %s/web: %v", ns, err)
		}
		rolledOut := time.Now()
		waitFor(ctx, t, "Deployment "+ns+"/web to have 2 ready replicas", func(ctx context.Context) (bool, error) {
			d, err := client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			return err == nil && d.Status.ReadyReplicas == 2 && d.Status.UpdatedReplicas == 2, err
		})
		t.Logf("rolled out in %v", time.Since(rolledOut).Round(time.Millisecond))

		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatalf("listing pods of %s/web: %v", ns, err)
		}
		for _, pod := range pods.Items {
			if pod.Spec.NodeName != controlplane.FakeNodeName || pod.Status.Phase != corev1.PodRunning ||
				!strings.HasPrefix(pod.Status.PodIP, "10.244.") {
				t.Errorf("pod %s: node %q, phase %s, IP %q; want on %s, Running, IP in 10.244.0.0/16",
					pod.Name, pod.Spec.NodeName, pod.Status.Phase, pod.Status.PodIP, controlplane.FakeNodeName)
			}
		}
	})

	t.Run("a pod's log streams through the apiserver as lines are appended", func(t *testing.T) {
		ns := controlplane.NewNamespace(t, cp.Config())
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "talker"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "talker", Image: "registry.example/talker:1.0"}}},
		}
		if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Pod %s/talker: %v", ns, err)
		}
		waitFor(ctx, t, "Pod "+ns+"/talker to run on the fake node", func(ctx context.Context) (bool, error) {
			p, err := client.CoreV1().Pods(ns).Get(ctx, "talker", metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning, err
		})
		log, err := cp.ServePodLog(ctx, ns, "talker")
		if err != nil {
			t.Fatal(err)
		}
		if err := log.Append("first line", "second line"); err != nil {
			t.Fatal(err)
		}
		stream, err := client.CoreV1().Pods(ns).GetLogs("talker", &corev1.PodLogOptions{Container: "talker", Follow: true}).Stream(ctx)
		if err != nil {
			t.Fatalf("following the log of %s/talker: %v", ns, err)
		}
		defer stream.Close()
		lines := bufio.NewScanner(stream)
		next := func() string {
			if !lines.Scan() {
				t.Fatalf("the log of %s/talker ended: %v", ns, lines.Err())
			}
			return lines.Text()
		}
		for _, want := range []string{"first line", "second line"} {
			if got := next(); got != want {
				t.Errorf("log line %q, want %q", got, want)
			}
		}
		// The follower has read what there was; the line appended now reaches
		// it only if the stream follows the file.
		if err := log.Append("third line, after the follower caught up"); err != nil {
			t.Fatal(err)
		}
		if got, want := next(), "third line, after the follower caught up"; got != want {
			t.Errorf("followed log line %q, want %q", got, want)
		}
	})

	t.Run("a deleted namespace goes away with its objects", func(t *testing.T) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "doomed-"}}
		ns, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating a namespace: %v", err)
		}
		if _, err := client.AppsV1().Deployments(ns.Name).Create(ctx, deployment("web", 1), metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Deployment %s/web: %v", ns.Name, err)
		}
		if err := client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("deleting namespace %s: %v", ns.Name, err)
		}
		waitFor(ctx, t, "namespace "+ns.Name+" to be gone", func(ctx context.Context) (bool, error) {
			_, err := client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
	})

	t.Run("Stop ends every component and removes the directory", func(t *testing.T) {
		stopped = true
		if err := cp.Stop(); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if _, err := os.Stat(cp.Dir()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("directory %s still exists after Stop (stat error %v)", cp.Dir(), err)
		}
		_, err := client.Discovery().ServerVersion()
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("asking the stopped apiserver at %s for its version: error %v, want connection refused", cp.Host(), err)
		}
	})
}

func deployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  name,
					Image: "registry.example/" + name + ":1.0", // never pulled: kwok fakes the kubelet
				}}},
			},
		},
	}
}

// waitFor polls done every 200ms until it reports true, failing the test with what it
// waited for if ctx ends first. A transient error from done is retried, and the last
// one is reported on timeout.
func waitFor(ctx context.Context, t *testing.T, what string, done func(context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		ok, err := done(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last error: %v)", what, err, last)
	}
}

func newClient(t *testing.T, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}
