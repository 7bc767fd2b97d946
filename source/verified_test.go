package source_test

import (
	"errors"
	"strings"
	"testing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/source/verify"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/signing"
)

// TestFetchVerifiesTagsAndCommits: with spec.source.verify's modes, Fetch
// checks the annotated tag it followed (read from the cache, which fetched
// the tag object with it), the commit, or both, and names the signers; a
// lightweight tag, an unsigned tag or commit, and a tag signed by a key not
// trusted are refused as RevisionNotVerified naming the tag or the commit.
func TestFetchVerifiesTagsAndCommits(t *testing.T) {
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "releases")
	alice := signing.NewGPG(t, "Alice", "alice@example.com")
	ci := signing.NewSSH(t, "ci@example.com")
	keys, err := verify.ParseKeys(map[string][]byte{"alice.asc": alice.Public, "allowed_signers": []byte(ci.AllowedSigners())})
	if err != nil {
		t.Fatal(err)
	}
	src := newSource(t, source.Options{})
	fetchVerified := func(ref v1alpha1.GitRef, mode string) (source.Revision, error) {
		return src.Fetch(t.Context(), source.Request{URL: repo.URL(), Ref: ref, Verify: &source.Verification{Mode: mode, Keys: keys}})
	}
	notVerified := func(t *testing.T, err error, want ...string) {
		t.Helper()
		var fe *source.FetchError
		if !errors.As(err, &fe) || fe.Reason != v1alpha1.ReasonRevisionNotVerified {
			t.Fatalf("err = %v, want a FetchError with the reason RevisionNotVerified", err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("err = %q, want it to say %q", err, w)
			}
		}
	}

	// An unsigned commit, tagged by Alice (gpg) as v1.0.0 and lightweight as v1.0.1.
	unsigned := repo.Commit(t, map[string]string{"apps/cm.yaml": configMap("web", "v1")}, "v1")
	repo.SetEnv(alice.Env()...)
	repo.Configure(t, alice.GitConfig())
	repo.Configure(t, map[string]string{"commit.gpgsign": "false"})
	repo.AnnotatedTag(t, "v1.0.0", "release v1.0.0")
	repo.Tag(t, "v1.0.1")

	t.Run("Tag: a tag Alice signed applies an unsigned commit", func(t *testing.T) {
		rev, err := fetchVerified(v1alpha1.GitRef{Tag: "v1.0.0"}, v1alpha1.VerifyTag)
		if err != nil {
			t.Fatal(err)
		}
		if want := "Alice <alice@example.com> (openpgp " + alice.Fingerprint + ")"; rev.Commit != unsigned || rev.Signer != want {
			t.Errorf("revision %s signed by %q, want %s signed by %q", rev.Commit, rev.Signer, unsigned, want)
		}
	})
	t.Run("TagAndHEAD: the same tag is refused for its unsigned commit", func(t *testing.T) {
		_, err := fetchVerified(v1alpha1.GitRef{Tag: "v1.0.0"}, v1alpha1.VerifyTagAndHEAD)
		notVerified(t, err, "commit "+unsigned, "not signed")
	})
	t.Run("HEAD: a branch at an unsigned commit is refused", func(t *testing.T) {
		_, err := fetchVerified(v1alpha1.GitRef{Branch: "main"}, v1alpha1.VerifyHEAD)
		notVerified(t, err, "commit "+unsigned, "not signed")
	})
	t.Run("Tag: a lightweight tag is refused", func(t *testing.T) {
		_, err := fetchVerified(v1alpha1.GitRef{Tag: "v1.0.1"}, v1alpha1.VerifyTag)
		notVerified(t, err, "tag v1.0.1", "lightweight")
	})

	// CI signs a commit and its tag with SSH; an annotated tag nobody signed follows.
	repo.Configure(t, ci.GitConfig())
	signed := repo.Commit(t, map[string]string{"apps/cm.yaml": configMap("web", "v2")}, "v2")
	repo.AnnotatedTag(t, "v2.0.0", "release v2.0.0")
	t.Run("TagAndHEAD: a signed tag of a signed commit, by semver range", func(t *testing.T) {
		rev, err := fetchVerified(v1alpha1.GitRef{SemVer: ">=2.0.0"}, v1alpha1.VerifyTagAndHEAD)
		if err != nil {
			t.Fatal(err)
		}
		if rev.Commit != signed || rev.Ref != "v2.0.0" || !strings.HasPrefix(rev.Signer, "ci@example.com (ssh SHA256:") {
			t.Errorf("revision %s signed by %q, want %s at v2.0.0 signed by ci@example.com", rev, rev.Signer, signed)
		}
	})
	repo.Configure(t, signing.Unsigned())
	repo.Commit(t, map[string]string{"apps/cm.yaml": configMap("web", "v3")}, "v3")
	repo.AnnotatedTag(t, "v3.0.0", "release v3.0.0")
	t.Run("Tag: the newest tag of a range, unsigned, is refused", func(t *testing.T) {
		_, err := fetchVerified(v1alpha1.GitRef{SemVer: ">=2.0.0"}, v1alpha1.VerifyTag)
		notVerified(t, err, "tag v3.0.0", "not signed")
	})
	t.Run("a pinned commit is verified as a commit whatever the mode", func(t *testing.T) {
		rev, err := fetchVerified(v1alpha1.GitRef{Commit: signed}, v1alpha1.VerifyTag)
		if err != nil || !strings.HasPrefix(rev.Signer, "ci@example.com") {
			t.Errorf("pin to the signed commit: %s signed by %q, %v; want it verified", rev, rev.Signer, err)
		}
		_, err = fetchVerified(v1alpha1.GitRef{Commit: unsigned}, v1alpha1.VerifyTag)
		notVerified(t, err, "commit "+unsigned, "not signed")
	})
}
