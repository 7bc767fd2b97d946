package source_test

import (
	"testing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/workload"
)

// BenchmarkRenderEveryTeamOfAMonorepo renders, from one commit, each of the 1,000
// team directories of the many-Syncs benchmark's repository (teams/team-NNNN, ten
// objects each), as a fleet of one Sync a team does at a new commit: one op is
// the thousand renders. The render cache keeps nothing, so each render reads its
// trees and files. Compare the ns/op and allocs/op of two trees in one run.
func BenchmarkRenderEveryTeamOfAMonorepo(b *testing.B) {
	const teams = 1000
	repo := gitserver.NewLocalRepo(b, "monorepo")
	head := repo.Commit(b, workload.Teams(teams), "teams")
	src, err := source.New(source.Options{CacheDir: b.TempDir(), AllowFileURLs: true, RenderCacheBytes: 1})
	if err != nil {
		b.Fatal(err)
	}
	rev, err := src.Fetch(b.Context(), source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Commit: head}})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		for i := range teams {
			snap, err := src.Render(b.Context(), rev, "teams/"+workload.TeamName(i), source.Helm{})
			if err != nil {
				b.Fatal(err)
			}
			if len(snap.Objects) != 10 {
				b.Fatalf("%s rendered %d objects; want 10", workload.TeamName(i), len(snap.Objects))
			}
		}
	}
}
