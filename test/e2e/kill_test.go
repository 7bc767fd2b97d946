package e2e

import (
	"fmt"
	"maps"
	"math/rand"
	"os"
	"syscall"
	"testing"
	"time"

	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// killScript is a sequence of commits, each as the files it writes ("" removes one):
// creates, changes and removals of ConfigMaps named after their file.
var killScript = []map[string]string{
	{"a0": "1", "a1": "1", "a2": "1", "a3": "1", "a4": "1", "a5": "1"},
	{"a0": "2", "a1": "2", "a2": "2", "b0": "1", "b1": "1", "b2": "1"},
	{"a3": "", "a4": "", "b1": ""},
	{"c0": "1", "c1": "1", "c2": "1", "c3": "1", "b0": "", "a3": "3"},
}

// TestKilledAtRandomPointsTheAgentConvergesToGit plays killScript (over and over at
// full size), killing the agent with SIGKILL at a random moment after each commit and
// restarting it; after each restart the cluster must equal git exactly, nothing
// leaked and nothing lost, and deleting the Sync at the end, with one more kill in
// the middle of it, leaves nothing behind.
func TestKilledAtRandomPointsTheAgentConvergesToGit(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts the agent many times")
	}
	kills := len(killScript)
	if os.Getenv(faultsFullEnv) == "1" {
		kills = 30
	}
	rng := rand.New(rand.NewSource(7)) //nolint:gosec // a repeatable choice of kill points
	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{})
	repo := git.CreateRepo(t, "kills")
	repo.Commit(t, map[string]string{"README.md": "# kills\n"}, "empty")
	a := startAgent(t)
	s := gitSync(ns, "kills", repo.URL(), "apps", 2*time.Second)
	s.Spec.PruneLimit, s.Spec.AllowEmpty = ptrIntOrString("100%"), true
	harness.Must(t, c.Create(t.Context(), s))

	want := map[string]string{}
	for i := 0; i < kills; i++ {
		step := killScript[i%len(killScript)]
		files := map[string]string{}
		for name, v := range step {
			files["apps/"+name+".yaml"] = killConfigMap(name, v)
			if v == "" {
				delete(want, name)
			} else {
				want[name] = v
			}
		}
		commit := repo.Commit(t, files, fmt.Sprintf("step %d", i))
		// The kill point is a random moment of the agent's work on the commit (the test
		// asserts convergence after it, never that something did not happen).
		after := time.Duration(rng.Int63n(int64(3 * time.Second)))
		time.Sleep(after)
		a.stop(t, syscall.SIGKILL)
		a = startAgent(t)
		waitRevision(t, c, s, commit)
		got := map[string]string{}
		for _, cm := range syncConfigMaps(t, c, s) {
			got[cm.Name] = cm.Data["v"]
		}
		if !maps.Equal(want, got) {
			t.Errorf("after step %d, killed %v after its commit: config maps %v, want %v", i, after, got, want)
		}
	}

	harness.Must(t, c.Delete(t.Context(), s))
	time.Sleep(time.Duration(rng.Int63n(int64(time.Second)))) // a random kill point in the deletion
	a.stop(t, syscall.SIGKILL)
	startAgent(t)
	waitGone(t, c, s)
	if left := syncConfigMaps(t, c, s); len(left) != 0 {
		t.Errorf("%d config maps leaked after the Sync was deleted", len(left))
	}
}

func killConfigMap(name, v string) string {
	if v == "" {
		return ""
	}
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {v: %q}\n", name, v)
}
