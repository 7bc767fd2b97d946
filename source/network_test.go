package source

import (
	"testing"

	"tether.dev/tether/test/gitserver"
)

// TestGitWorksWhileRenderingIsIsolated: IsolateRendering (render.IsolateRendering,
// tested there) closes the default transport, and git has clients of its own.
// The test installs it as main does and restores the process afterwards; it
// must not run in parallel with tests that use the default HTTP transport.
func TestGitWorksWhileRenderingIsIsolated(t *testing.T) {
	restore := IsolateRendering()
	t.Cleanup(restore)

	// git has clients of its own: fetching, and rendering what was fetched, work
	// while the default transport refuses everything.
	for _, scheme := range []string{"http", "https", "file"} {
		t.Run("git over "+scheme+" fetches and renders while rendering is isolated", func(t *testing.T) {
			var repo *gitserver.Repo
			var ca []byte
			switch scheme {
			case "file": // demos; go-git runs git-upload-pack, which GIT_ALLOW_PROTOCOL does not concern
				repo = gitserver.NewLocalRepo(t, "deploy")
			default:
				server := gitserver.Start(t, gitserver.Options{TLS: scheme == "https"})
				repo = server.CreateRepo(t, "deploy")
				if scheme == "https" {
					ca = server.CACert()
				}
			}
			head := repo.Commit(t, map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"}, "one")
			s := newCacheTestSource(t, Options{})
			req := Request{URL: repo.URL(), Ref: mainBranch, Auth: Auth{CAFile: ca}}
			rev, err := s.Fetch(t.Context(), req)
			if err != nil || rev.Commit != head {
				t.Fatalf("Fetch() = %v, %v; want commit %s", rev, err, head)
			}
			snap, err := s.Render(t.Context(), rev, "app", Helm{})
			if err != nil || len(snap.Objects) != 1 {
				t.Fatalf("Render() error = %v; want the one ConfigMap", err)
			}
		})
	}
}
