package e2e

import (
	"os"
	"testing"
	"tether.dev/tether/source"

	"tether.dev/tether/test/agentbin"
	"tether.dev/tether/test/controlplane"
)

// tetherBinary is the agent binary TestMain built from this tree.
var tetherBinary string

func TestMain(m *testing.M) {
	source.ServeRenderWorker()
	os.Exit(agentbin.Main(m, "e2e", &tetherBinary, controlplane.Options{}))
}
