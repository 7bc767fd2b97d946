package render_test

import (
	"os"
	"testing"

	"tether.dev/tether/source/wall"
)

// TestMain makes the test binary the render worker of the tests that take
// the render wall (worst_memory_test.go), as the tether binary is the agent's.
func TestMain(m *testing.M) {
	wall.ServeRenderWorker()
	os.Exit(m.Run())
}
