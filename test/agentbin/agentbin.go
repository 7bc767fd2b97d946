// Package agentbin builds the tether binary of this tree for the test packages that
// run it as users do (e2e, alerts), once per test binary; the packages build it one
// at a time, and all but the first copy it from Go's build cache.
package agentbin

import (
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/agentbin/tetherbin"
	"tether.dev/tether/test/controlplane"
)

// Main builds the tether binary into a temporary directory, sets *binary to its
// path, and runs m against a shared control plane started with opts; name labels
// the directory and errors. Use it as TestMain's body: os.Exit(agentbin.Main(...)).
// It prints how long the build and the control plane's start took (go test -v
// shows them), since under load these are most of a package's time.
func Main(m *testing.M, name string, binary *string, opts controlplane.Options) int {
	return tetherbin.Main(name, binary, func() int { return controlplane.RunMain(m, opts) })
}

// Client returns a client of the shared control plane that knows the built-in kinds,
// Tether's and CRDs, after installing the Sync CRD from deploy/base/crd (the calling
// package is two directories below the repository's root, as test/e2e is).
func Client(tb testing.TB) client.Client {
	tb.Helper()
	cp := controlplane.Shared(tb)
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			tb.Fatal(err)
		}
	}
	c, err := client.New(cp.Config(), client.Options{Scheme: scheme})
	if err != nil {
		tb.Fatal(err)
	}
	controlplane.InstallCRDs(tb, cp.Config(), filepath.Join("..", "..", "deploy", "base", "crd"))
	return c
}
