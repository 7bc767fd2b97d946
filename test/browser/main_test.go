package browser

import (
	"fmt"
	"os"
	"testing"
	"time"

	"tether.dev/tether/test/agentbin"
	"tether.dev/tether/test/controlplane"
)

// tetherBinary is the tether binary of this tree, which runs both the agent and
// `tether ui`.
var tetherBinary string

// fullSet is whether the whole set runs (the default: it takes about half a
// minute), or only the tests that need no kube-controller-manager, kube-scheduler
// and kwok (TETHER_UI_REDUCED=1, for a quick run while working on the UI).
var fullSet = os.Getenv("TETHER_UI_REDUCED") != "1"

// waitLong bounds every wait for the agent, the UI or the page: a guard against
// hangs on a loaded machine, not a performance assertion.
const waitLong = 2 * time.Minute

func TestMain(m *testing.M) {
	path, err := findChromium()
	if err != nil {
		// A browser asked for (TETHER_CHROMIUM) or required (CI) must be there.
		if os.Getenv("CI") == "true" || os.Getenv("TETHER_CHROMIUM") != "" {
			fmt.Fprintf(os.Stderr, "browser: %v (the UI's browser tests must run under CI=true or with TETHER_CHROMIUM set; `make test` installs Chromium through hack/chromium.sh)\n", err)
			os.Exit(1)
		}
		noBrowser = err.Error()
		os.Exit(m.Run()) // every test skips, saying why
	}
	chromiumPath = path
	if axePath, err = findAxe(); err != nil {
		// As the browser, CI must run the accessibility checks. The Makefile
		// names TETHER_AXE_CORE for every target, make test-short's too, so a
		// name without a file does not fail elsewhere.
		if os.Getenv("CI") == "true" {
			fmt.Fprintf(os.Stderr, "browser: axe-core: %v (the accessibility checks must run under CI=true; `make test` installs axe-core through hack/axe.sh)\n", err)
			os.Exit(1)
		}
		noAxe = err.Error() // each axe-core check skips, saying why
	}
	code := agentbin.Main(m, "browser", &tetherBinary, controlplane.Options{Workloads: fullSet})
	stopBrowser()
	os.Exit(code)
}

// needBrowser skips t, saying why, when there is no browser (TestMain then
// starts no control plane either).
func needBrowser(t *testing.T) {
	t.Helper()
	if noBrowser != "" {
		t.Skipf("the UI's browser tests need Chromium: %s", noBrowser)
	}
}

// needFullSet skips t unless the whole set runs (and there is a browser).
func needFullSet(t *testing.T) {
	t.Helper()
	needBrowser(t)
	if !fullSet {
		t.Skip("in the full set of browser tests only: unset TETHER_UI_REDUCED")
	}
}
