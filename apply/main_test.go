package apply_test

import (
	"os"
	"testing"

	"tether.dev/tether/test/controlplane"
)

// TestMain runs every test of the package against one real kube-apiserver and etcd;
// each test works in a namespace of its own.
func TestMain(m *testing.M) {
	os.Exit(controlplane.RunMain(m, controlplane.Options{}))
}
