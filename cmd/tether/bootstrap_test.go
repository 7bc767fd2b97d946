package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// TestBootstrapGit: `tether bootstrap git` into an empty repository of a git
// server that wants credentials commits the install (what `install --export`
// prints) and the Sync beside it, pushes once, installs, and creates the Sync
// and the Secret it fetches with; the credentials never reach git or the
// output. Run again, it makes no commit and changes no object.
func TestBootstrapGit(t *testing.T) {
	const password = "bootstrap-password-7f3a"
	// Over HTTPS, with a certificate of a private authority: --ca-file
	// trusts it for the push, and the Secret carries it to the agent.
	srv := gitserver.Start(t, gitserver.Options{Username: "tether", Password: password, TLS: true})
	repo := srv.CreateRepo(t, "platform/clusters")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	harness.Must(t, os.WriteFile(caFile, srv.CACert(), 0o600))
	_, c, tether := privateCluster(t)
	t.Setenv(envGitPassword, password)
	args := []string{"bootstrap", "git", "--url", repo.URL(), "--username", "tether", "--ca-file", caFile, "--path", "clusters/prod/tether"}

	var head string
	t.Run("commits the install and the Sync, and installs both", func(t *testing.T) {
		out, err := tether(args...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if strings.Contains(out, password) {
			t.Errorf("the output holds the password:\n%s", out)
		}
		head = gitserver.Git(t, repo.Dir(), "rev-parse", "main")
		wantLine(t, out, "git: committed "+head[:12]+" to main: clusters/prod/tether/install.yaml, clusters/prod/tether-sync.yaml")
		wantLine(t, out, "customresourcedefinition.apiextensions.k8s.io/syncs.tether.dev created")
		wantLine(t, out, "secret/tether-git-credentials created")
		wantLine(t, out, "sync.tether.dev/tether created")

		var export bytes.Buffer
		harness.Must(t, run(t.Context(), []string{"install", "--export"}, &export, &export))
		if got := gitserver.Git(t, repo.Dir(), "show", "main:clusters/prod/tether/install.yaml"); got != strings.TrimSpace(export.String()) {
			t.Error("install.yaml in git is not what tether install --export prints")
		}
		inGit := gitserver.Git(t, repo.Dir(), "show", "main:clusters/prod/tether-sync.yaml")
		if strings.Contains(inGit, password) || strings.Contains(inGit, base64.StdEncoding.EncodeToString([]byte(password))) {
			t.Error("the Sync in git holds the password")
		}
		var inRepo v1alpha1.Sync
		harness.Must(t, yaml.UnmarshalStrict([]byte(strings.SplitN(inGit, "---\n", 2)[1]), &inRepo))

		var live v1alpha1.Sync
		harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: "tether-system", Name: "tether"}, &live))
		for _, s := range []v1alpha1.Sync{inRepo, live} {
			src := s.Spec.Source
			if src.URL != repo.URL() || src.Ref.Branch != "main" || src.Path != "clusters/prod/tether" ||
				src.SecretRef == nil || src.SecretRef.Name != "tether-git-credentials" || s.Spec.DeletionPolicy != v1alpha1.DeletionPolicyOrphan {
				t.Errorf("the Sync follows the wrong thing: %+v, deletionPolicy %q", src, s.Spec.DeletionPolicy)
			}
		}
		var secret corev1.Secret
		harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: "tether-system", Name: "tether-git-credentials"}, &secret))
		if string(secret.Data["username"]) != "tether" || string(secret.Data["password"]) != password || !bytes.Equal(secret.Data["caFile"], srv.CACert()) {
			t.Errorf("the Secret holds keys %v, not the credentials given", keysOf(secret.Data))
		}
	})

	t.Run("run again, it commits nothing and changes nothing", func(t *testing.T) {
		pushes := repo.Requests().Pushes
		out, err := tether(args...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		got := lines(out)
		if got[0] != "git: main already holds the install at clusters/prod/tether: nothing to commit" {
			t.Errorf("first line %q", got[0])
		}
		for _, line := range got[1:] {
			if !strings.HasSuffix(line, " unchanged") {
				t.Errorf("line %q: want unchanged", line)
			}
		}
		if now := gitserver.Git(t, repo.Dir(), "rev-parse", "main"); now != head {
			t.Errorf("main moved from %s to %s", head, now)
		}
		if n := repo.Requests().Pushes; n != pushes {
			t.Errorf("%d pushes", n-pushes)
		}
	})
}

func keysOf(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
