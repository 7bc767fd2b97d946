package controlplane

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// startTimeout bounds RunMain's start. A start takes seconds; two minutes means a
// component is stuck, and failing then beats waiting for `go test -timeout`.
const startTimeout = 2 * time.Minute

// shared is the control plane RunMain started for this test binary (one test package).
var shared *ControlPlane

// RunMain is the body of a test package's TestMain: it starts one control plane for
// the whole package, runs the tests, stops the control plane and returns the exit
// code for os.Exit. Tests reach the control plane through Shared.
//
//	func TestMain(m *testing.M) {
//		os.Exit(controlplane.RunMain(m, controlplane.Options{}))
//	}
//
// If the control plane does not start, no test runs and RunMain prints why, with the
// end of the failing component's log, and returns 1. If a component crashed while the
// tests ran, RunMain reports it and returns 1 even if every test passed. An interrupt
// (^C) stops the control plane before the binary exits, so no data directory is
// left behind.
func RunMain(m *testing.M, opts Options) int {
	// RunMain is the body of TestMain, where the test binary's contexts begin.
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cp, err := Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "controlplane: the test control plane did not start, so no test ran: %v\n", err)
		return 1
	}
	shared = cp
	stopOnInterrupt(cp)

	code := m.Run()
	if err := cp.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "controlplane: %v\n", err)
		code = max(code, 1)
	}
	return code
}

// stopOnInterrupt stops cp and exits when the test binary is interrupted, instead of
// dying with the components' data directory still on disk.
func stopOnInterrupt(cp *ControlPlane) {
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-interrupted
		_ = cp.Stop()
		fmt.Fprintf(os.Stderr, "controlplane: stopped on %v\n", sig)
		os.Exit(1)
	}()
}

// Shared returns the control plane RunMain started for this test package, and fails
// the test if this package's TestMain does not call RunMain.
func Shared(t testing.TB) *ControlPlane {
	t.Helper()
	if shared == nil {
		t.Fatal("no shared control plane: this package's TestMain must call controlplane.RunMain")
	}
	return shared
}

// NewNamespace creates a namespace for test t alone and deletes it when t ends, so
// tests sharing a control plane do not see each other's objects. Its name is derived
// from the test's name plus a random suffix ("test-applies-changed-objects-x7k2p"),
// and its annotation tether.dev/test holds the full test name, so a namespace left in
// the cluster can be traced to its test.
//
// Deletion does not wait: without Options.Workloads there is no namespace controller,
// so deleted namespaces stay Terminating, which no other test can see.
func NewNamespace(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("creating a namespace for %s: %v", t.Name(), err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: namespacePrefix(t.Name()),
		Annotations:  map[string]string{"tether.dev/test": t.Name()},
	}}
	// A generated name can collide with an existing one; the apiserver then answers
	// AlreadyExists rather than picking another suffix.
	var created *corev1.Namespace
	for range 3 {
		created, err = client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			break
		}
	}
	if err != nil {
		t.Fatalf("creating a namespace for %s: %v", t.Name(), err)
	}
	t.Cleanup(func() {
		// t.Context is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 30*time.Second)
		defer cancel()
		err := client.CoreV1().Namespaces().Delete(ctx, created.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", created.Name, err)
		}
	})
	return created.Name
}

var notDNSLabel = regexp.MustCompile(`[^a-z0-9]+`)

// namespacePrefix makes a GenerateName prefix from a test name: lower case, runs of
// other characters as one dash, short enough that the apiserver's five-character
// suffix keeps the name within a DNS label's 63.
func namespacePrefix(testName string) string {
	const maxPrefix = 50
	name := notDNSLabel.ReplaceAllString(strings.ToLower(strings.TrimPrefix(testName, "Test")), "-")
	if len(name) > maxPrefix-len("test--") {
		name = name[:maxPrefix-len("test--")]
	}
	name = strings.Trim(name, "-")
	if name == "" {
		return "test-"
	}
	return "test-" + name + "-"
}
