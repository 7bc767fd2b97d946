package renderfuzz

import (
	"os"
	"testing"

	"tether.dev/tether/test/agentbin/tetherbin"
)

// tetherBinary is the tether binary of this tree, built as it ships.
var tetherBinary string

func TestMain(m *testing.M) {
	os.Exit(tetherbin.Main("renderfuzz", &tetherBinary, m.Run))
}
