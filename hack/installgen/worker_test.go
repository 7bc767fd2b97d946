package main

import (
	"os"
	"testing"

	"tether.dev/tether/source"
)

// TestMain makes the test binary the render worker of the chart renders its
// tests make (source.ServeRenderWorker).
func TestMain(m *testing.M) {
	source.ServeRenderWorker()
	os.Exit(m.Run())
}
