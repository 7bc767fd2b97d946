// Package gitserver runs a real git server on loopback for Tether's tests.
//
// Tether's source package talks to git servers over the network; its tests must meet
// the same protocol a user's forge speaks, not a fake. A Server is the git CLI's own
// smart-HTTP implementation, `git http-backend`, run through net/http/cgi behind an
// httptest listener on 127.0.0.1. Because it is real, it answers both protocol v0/v1
// (what go-git speaks) and protocol v2 (what the git CLI speaks).
//
// What the package owns:
//
//   - the server: bare repositories under a temporary directory, optional basic-auth or
//     bearer-token authentication, optional HTTPS with a private test authority, and
//     per-repository request counters (ref listings, fetches, pushes, refusals) and
//     byte counters (Traffic) so a test can prove that the agent asks cheaply before
//     it fetches;
//   - an SSH side (StartSSH): the same repositories over SSH on loopback, served by the
//     real git-upload-pack behind a Go SSH server with its own host key and a list of
//     authorized client keys, for tests of key authentication and host key checking;
//   - the writer side of a repository: a Repo keeps a work clone and turns
//     Commit, CreateBranch, Tag and ForcePush into real git commands (the git CLI,
//     found on PATH) whose results are pushed to the bare repository;
//   - a git environment isolated from the machine: no system or global config, no
//     credential prompts, fixed author and committer, so a developer's ~/.gitconfig
//     (signing, hooks, default branch) cannot change a test's outcome.
//
// What it does not own: anything about how Tether fetches. The helpers shell out to git
// because they stand in for a human pushing to a forge; the agent itself never does.
//
// Usage:
//
//	srv := gitserver.Start(t, gitserver.Options{})
//	repo := srv.CreateRepo(t, "app")
//	rev := repo.Commit(t, map[string]string{"deploy/cm.yaml": configMapYAML}, "add config map")
//	// point a Sync at repo.URL() and expect status.lastAppliedRevision to name rev
//
// The helpers write to a repository behind the server's back (straight into the bare
// repository on disk), so authentication and the request counters see only what the
// code under test does. A repository reachable through a file:// URL instead of HTTP
// comes from NewLocalRepo; Repo.FileURL gives that form for any repository.
//
// Helpers fail the test they are given (t.Fatalf), so call them with the *testing.T of
// the test or subtest that is running, never with a parent's.
package gitserver
