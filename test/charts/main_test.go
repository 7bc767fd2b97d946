package charts

import (
	"os"
	"testing"

	"tether.dev/tether/test/agentbin"
	"tether.dev/tether/test/controlplane"
)

// tetherBinary is the tether binary TestMain built from this tree.
var tetherBinary string

func TestMain(m *testing.M) {
	os.Exit(agentbin.Main(m, "charts", &tetherBinary, controlplane.Options{}))
}
