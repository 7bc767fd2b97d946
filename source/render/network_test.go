package render

import (
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"

	"tether.dev/tether/source/result"
)

// TestRenderingIsIsolatedFromTheNetwork: the kustomization check gives good
// messages, but what keeps rendering off the network is the process itself.
// These tests install IsolateRendering as main does and restore the process
// afterwards; they must not run in parallel with tests that use the default
// HTTP transport.
func TestRenderingIsIsolatedFromTheNetwork(t *testing.T) {
	srv := startMetadataServer(t)
	restore := IsolateRendering()
	t.Cleanup(restore)

	t.Run("a request through the default transport is refused before it is sent, naming it", func(t *testing.T) {
		before := srv.requests.Load()
		resp, err := http.Get(srv.URL + "/meta-data")
		if err == nil {
			_ = resp.Body.Close()
		}
		if !errors.Is(err, ErrNetworkRefused) || !strings.Contains(err.Error(), "GET "+srv.URL+"/meta-data refused") {
			t.Errorf("http.Get() error = %v; want it refused, naming the request", err)
		}
		if n := srv.requests.Load() - before; n != 0 {
			t.Errorf("the server saw %d requests; want none", n)
		}
	})

	// A transformers directory whose kustomization computes a builtin
	// configuration: a replacement copies a URL from a ConfigMap's data (a value,
	// never checked) into a PatchTransformer's path. No check before kustomize
	// runs can see the URL; the process refuses the request.
	computed := map[string]string{
		"app/kustomization.yaml":     "resources: [deploy.yaml]\ntransformers: [computed]\n",
		"app/deploy.yaml":            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 1}\n",
		"app/computed/patch.yaml":    "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: local.yaml\n",
		"app/computed/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {u: \"" + srv.URL + "/meta-data\"}\n",
		"app/computed/kustomization.yaml": "resources: [patch.yaml, settings.yaml]\nreplacements:\n" +
			"- source: {kind: ConfigMap, name: settings, fieldPath: data.u}\n" +
			"  targets: [{select: {kind: PatchTransformer}, fieldPaths: [path]}]\n",
	}
	t.Run("a URL kustomize computes while it builds is refused, not fetched", func(t *testing.T) {
		before := srv.requests.Load()
		objs, err := renderWithin(t, computed)
		if n := srv.requests.Load() - before; n != 0 {
			t.Errorf("rendering made %d requests; want none", n)
		}
		if err == nil || !strings.Contains(err.Error(), ErrNetworkRefused.Error()) || !result.IsRenderError(err) {
			t.Errorf("Dir() = %v, error %v; want a *result.RenderError saying the request was refused", ids(objs), err)
		}
	})

	t.Run("a git base kustomize would clone is refused by git, had the check missed it", func(t *testing.T) {
		// buildKustomize skips the check, as a spelling it missed would.
		fs := memFS(t, map[string]string{
			"app/kustomization.yaml": "resources: [\"" + srv.URL + "/org/repo.git\"]\n",
		})
		before := srv.requests.Load()
		_, err := buildKustomize(fs, "/app", func(p string) string { return p }, &byteBudget{})
		if n := srv.requests.Load() - before; n != 0 {
			t.Errorf("kustomize made %d requests; want none", n)
		}
		if err == nil {
			t.Fatal("buildKustomize() succeeded; want the remote base refused")
		}
		// Kustomize first loads the URL as a file (refused by the transport), then
		// clones it with the git program: refused by git, or there is none.
		if msg := err.Error(); !strings.Contains(msg, ErrNetworkRefused.Error()) ||
			(!strings.Contains(msg, "transport 'http' not allowed") && !strings.Contains(msg, "no 'git' program")) {
			t.Errorf("error %q; want the file load and the clone both refused", msg)
		}
		if os.Getenv(gitAllowProtocol) != "none" {
			t.Errorf("%s = %q; want none while rendering is isolated", gitAllowProtocol, os.Getenv(gitAllowProtocol))
		}
	})

	// Kustomize clones whatever its git URL parser accepts, before it looks for a
	// directory of that name; a repository can hold a directory named like one.
	// (Isolated, so that a miss would be refused by git, never sent.)
	for _, spelling := range []string{"github.com:org/repo", "GitHub.com/org/repo", "git::127.0.0.1/org/repo"} {
		t.Run("a directory named "+spelling+" is refused as a remote base", func(t *testing.T) {
			dir := "app/" + spelling
			_, err := renderWithin(t, map[string]string{
				"app/kustomization.yaml":    "resources: [\"" + spelling + "\"]\n",
				dir + "/kustomization.yaml": "resources: [cm.yaml]\n",
				dir + "/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
			})
			var re *result.RenderError
			if !errors.As(err, &re) || re.File != "app/kustomization.yaml" || !errors.Is(err, ErrRemoteReference) ||
				!strings.Contains(err.Error(), "resources[0]: remote resource") {
				t.Errorf("Dir() error = %v; want app/kustomization.yaml's resources[0] refused as a remote base", err)
			}
		})
	}
}
