package source

import (
	"encoding/base64"
	"math/rand/v2"

	"tether.dev/tether/test/harness"
)

// PeakHeap is harness.PeakHeap, and RaceEnabled raceEnabled, for the package's
// external tests (memory_test.go).
func PeakHeap() int64 { return harness.PeakHeap() }

var RaceEnabled = raceEnabled

// randomText is n bytes that compress poorly, the same for the same seed: the
// data of a repository that costs what it weighs (as source/gitcache's tests
// make theirs).
func randomText(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n*3/4+3)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return base64.StdEncoding.EncodeToString(b)[:n]
}

// RandomText is randomText, for the tests outside the package.
var RandomText = randomText
