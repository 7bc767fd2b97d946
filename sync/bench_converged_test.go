package sync_test

import (
	"testing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/apicount"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/workload"
)

// BenchmarkConvergedReconcileOfATeam measures one reconcile of a converged Sync of
// the many-Syncs benchmark's shape (a team's ten objects: two apps and two
// ConfigMaps), the work a fleet does at every poll: its time, and what it
// allocates, which sets how far the heap of an agent with 1,000 such Syncs grows
// while they come back at once. It fails if the reconcile sends any request
// about the Sync's objects.
func BenchmarkConvergedReconcileOfATeam(b *testing.B) {
	a := startAgent(b)
	ns := controlplane.NewNamespace(b, controlplane.Shared(b).Config())
	repo := gitserver.NewLocalRepo(b, "teams")
	commit := repo.Commit(b, workload.Teams(1), "one team")
	s := a.newSync(b, ns, repo.FileURL(), func(s *v1alpha1.Sync) { s.Spec.Source.Path = "teams/" + workload.TeamName(0) })
	a.WaitApplied(b, s, commit)
	a.Reconcile(b, s) // the first reconcile after Ready may still settle its status

	a.applies.Reset()
	b.ReportAllocs()
	for b.Loop() {
		a.Reconcile(b, s)
	}
	if got := a.applies.Snapshot(); got.Writes()+got[apicount.DryRun] != 0 {
		b.Fatalf("a converged reconcile sent writes or dry-runs: %v", got)
	}
}
