package main

import (
	"bytes"
	"strings"
	"testing"

	"tether.dev/tether/test/controlplane"
)

// TestEveryCommandExitsTwoForASyncThatIsNotThere: a missing Sync is a question the
// command cannot answer, whichever command is asked (docs/cli.md's table).
func TestEveryCommandExitsTwoForASyncThatIsNotThere(t *testing.T) {
	cp := controlplane.Shared(t)
	controlplane.InstallCRDs(t, cp.Config(), "../../deploy/base/crd")
	ns := controlplane.NewNamespace(t, cp.Config())
	for _, args := range [][]string{
		{"get", "ghost"},
		{"tree", "ghost"},
		{"events", "ghost"},
		{"suspend", "ghost"},
		{"resume", "ghost"},
		{"reconcile", "ghost"},
		{"reconcile", "ghost", "--wait", "--timeout", "5s"},
		{"wait", "ghost", "--healthy", "--timeout", "5s"},
		{"diff", "ghost"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(t.Context(), append(args, "--kubeconfig", cp.KubeconfigPath(), "-n", ns), &out, &errOut)
			code := exitCode(err, &errOut)
			if code != exitBroken || errOut.String() != "tether: no Sync "+ns+"/ghost\n" {
				t.Errorf("exit status %d, stderr %q; want 2 and a message saying the Sync is not found", code, errOut.String())
			}
		})
	}
}
