package wall

import (
	"os"
	"testing"
)

// TestMain makes the test binary the render worker of its tests, as the
// tether binary is the agent's.
func TestMain(m *testing.M) {
	ServeRenderWorker()
	os.Exit(m.Run())
}
