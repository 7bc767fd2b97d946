package source

import "tether.dev/tether/test/harness"

// PeakHeap is harness.PeakHeap, and RaceEnabled raceEnabled, for the package's
// external tests (memory_test.go).
func PeakHeap() int64 { return harness.PeakHeap() }

var RaceEnabled = raceEnabled
