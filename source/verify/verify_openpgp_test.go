package verify

import (
	"strings"
	"testing"
)

func TestOpenPGPPayload(t *testing.T) {
	t.Parallel()
	k := kit(t)
	keys := trusted(t)
	r := newRepo(t)
	unsigned := r.commit("Signed outside git", nil)
	sig := k.detachSign(t, k.alice, unsigned)

	t.Run("the payload is the commit without its gpgsig header, as gpg signs it for git", func(t *testing.T) {
		got, err := keys.Commit(withHeader(unsigned, "gpgsig", sig))
		wantSigner(t, got, err, Signer{Method: "openpgp", Identity: k.alice.uid, Key: k.alice.fpr})
	})
	t.Run("a gpgsig-sha256 header is left out of the payload, with its continuation lines", func(t *testing.T) {
		raw := withHeader(unsigned, "gpgsig-sha256", []byte("-----BEGIN PGP SIGNATURE-----\n\nabc\n-----END PGP SIGNATURE-----\n"))
		raw = withHeader(raw, "gpgsig", sig)
		_, err := keys.Commit(raw)
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("any other header is in the payload", func(t *testing.T) {
		raw := withHeader(unsigned, "encoding", []byte("ISO-8859-1"))
		raw = withHeader(raw, "gpgsig", sig)
		got, err := keys.Commit(raw)
		wantRefused(t, got, err, BadSignature, k.alice.fpr)
	})
}

func TestOpenPGPTime(t *testing.T) {
	t.Parallel()
	k := kit(t)
	r := newRepo(t)
	// Old's key was made on 2020-01-01 and expired a year later.
	keys := mustParse(t, map[string][]byte{"old.asc": k.old.public})
	old := Signer{Method: "openpgp", Identity: k.old.uid, Key: k.old.fpr}
	june2020 := k.at(t, k.old, "20200601T000000")

	t.Run("a key expired today verifies a commit it signed while it was valid", func(t *testing.T) {
		raw := r.commit("Made in June 2020", june2020, "GIT_COMMITTER_DATE=2020-06-01T00:00:00Z")
		got, err := keys.Commit(raw)
		wantSigner(t, got, err, old)
	})
	t.Run("a commit dated after its key expired is KeyNotValid", func(t *testing.T) {
		raw := r.commit("Dated 2022, signed in 2020", june2020, "GIT_COMMITTER_DATE=2022-01-01T00:00:00Z")
		got, err := keys.Commit(raw)
		wantRefused(t, got, err, KeyNotValid, old.String())
		if !strings.Contains(err.Error(), "at 2022-01-01T00:00:00Z") || !strings.Contains(err.Error(), "expired") {
			t.Errorf("message %q, want it to say the key expired at the commit's time", err)
		}
	})
	t.Run("a commit dated before its signature is judged at the signature's time", func(t *testing.T) {
		raw := r.commit("Dated 2019, signed in 2020", june2020, "GIT_COMMITTER_DATE=2019-06-01T00:00:00Z")
		got, err := keys.Commit(raw)
		wantSigner(t, got, err, old)
	})
}

func TestOpenPGPRevoked(t *testing.T) {
	t.Parallel()
	k := kit(t)
	r := newRepo(t)
	// Mallory's key was made in 2019 and signs a commit dated 2020.
	raw := r.commit("Made in June 2020", k.at(t, k.mallory, "20200601T000000"), "GIT_COMMITTER_DATE=2020-06-01T00:00:00Z")
	mallory := Signer{Method: "openpgp", Identity: k.mallory.uid, Key: k.mallory.fpr}

	before := mustParse(t, map[string][]byte{"mallory.asc": k.mallory.public})
	got, err := before.Commit(raw)
	wantSigner(t, got, err, mallory)

	revoked, err := k.revoke(k.mallory)
	if err != nil {
		t.Fatal(err)
	}
	after := mustParse(t, map[string][]byte{"mallory.asc": revoked})
	t.Run("a key revoked today is refused, though the commit is dated before", func(t *testing.T) {
		got, err := after.Commit(raw)
		wantRefused(t, got, err, KeyNotValid, mallory.String())
		if !strings.Contains(err.Error(), "revoked") {
			t.Errorf("message %q, want it to say the key is revoked", err)
		}
	})
	t.Run("the revocation changes the digest", func(t *testing.T) {
		if before.Digest() == after.Digest() {
			t.Error("a key and the same key revoked share a digest")
		}
	})
}
