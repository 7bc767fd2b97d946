package alerts

import (
	"flag"
	"os"
	"strconv"
	"testing"

	"tether.dev/tether/test/agentbin"
	"tether.dev/tether/test/controlplane"
)

// tetherBinary is the agent binary TestMain built from this tree.
var tetherBinary string

// syncCases is how many cases of the Sync alerts run in parallel.
const syncCases = 4

func TestMain(m *testing.M) {
	flag.Parse()
	runAllSyncCasesAtOnce()
	os.Exit(agentbin.Main(m, "alerts", &tetherBinary, controlplane.Options{Workloads: true}))
}

// runAllSyncCasesAtOnce raises -test.parallel to syncCases unless it was given: it
// defaults to GOMAXPROCS, and on two cores the four cases of the Sync alerts ran two
// by two. They wait on Prometheus's evaluations, a progress deadline and `for`, not
// on the CPU.
func runAllSyncCasesAtOnce() {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	p := flag.Lookup("test.parallel")
	if given || p == nil {
		return
	}
	if n, err := strconv.Atoi(p.Value.String()); err == nil && n < syncCases {
		_ = p.Value.Set(strconv.Itoa(syncCases))
	}
}
