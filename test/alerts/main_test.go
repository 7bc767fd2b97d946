package alerts

import (
	"os"
	"testing"

	"tether.dev/tether/test/agentbin"
	"tether.dev/tether/test/controlplane"
)

// tetherBinary is the agent binary TestMain built from this tree.
var tetherBinary string

func TestMain(m *testing.M) {
	os.Exit(agentbin.Main(m, "alerts", &tetherBinary, controlplane.Options{Workloads: true}))
}
