package verify

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// trusted are the keys most tests trust: Alice's OpenPGP key and ci's SSH key.
func trusted(t testing.TB) *Keys {
	t.Helper()
	k := kit(t)
	return mustParse(t, map[string][]byte{
		"alice.asc":       k.alice.public,
		"allowed_signers": []byte("ci@example.com " + k.ci.public + "\n"),
	})
}

func mustParse(t testing.TB, data map[string][]byte) *Keys {
	t.Helper()
	keys, err := ParseKeys(data)
	if err != nil {
		t.Fatalf("ParseKeys: %v", err)
	}
	return keys
}

// wantSigner fails unless the object verified and names want.
func wantSigner(t *testing.T, got Signer, err error, want Signer) {
	t.Helper()
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("signer (-want +got):\n%s", diff)
	}
}

// wantRefused fails unless err is an *Error of reason naming signer (when
// signer is not empty), and returns a copy of it.
func wantRefused(t *testing.T, got Signer, err error, reason Reason, signer string) Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want a refusal (%s), got signer %v and error %v", reason, got, err)
	}
	if got != (Signer{}) {
		t.Errorf("a refusal names signer %v", got)
	}
	if e.Reason != reason {
		t.Errorf("reason %s, want %s (%v)", e.Reason, reason, err)
	}
	if signer != "" && !strings.Contains(e.Signer, signer) {
		t.Errorf("Error.Signer %q, want it to name %q", e.Signer, signer)
	}
	return *e
}

// tamper changes one byte of the message of a signed object.
func tamper(t *testing.T, raw []byte, message string) []byte {
	t.Helper()
	i := bytes.LastIndex(raw, []byte(message))
	if i < 0 {
		t.Fatalf("the object holds no %q", message)
	}
	out := bytes.Clone(raw)
	out[i] ^= 0x20 // the case of the message's first letter
	return out
}

func TestCommit(t *testing.T) {
	t.Parallel()
	k := kit(t)
	keys := trusted(t)
	r := newRepo(t)
	alice := Signer{Method: "openpgp", Identity: "Alice <alice@example.com>", Key: k.alice.fpr}
	ci := Signer{Method: "ssh", Identity: "ci@example.com", Key: k.ci.fpr}

	t.Run("a commit signed with gpg verifies and names its signer from the trusted key", func(t *testing.T) {
		got, err := keys.Commit(r.commit("Deploy the web tier", k.alice))
		wantSigner(t, got, err, alice)
	})
	t.Run("a commit signed with ssh verifies", func(t *testing.T) {
		got, err := keys.Commit(r.commit("Deploy the api", k.ci))
		wantSigner(t, got, err, ci)
	})
	t.Run("an unsigned commit is Unsigned", func(t *testing.T) {
		got, err := keys.Commit(r.commit("Nobody signs this", nil))
		wantRefused(t, got, err, Unsigned, "")
		if err.Error() != "not signed" {
			t.Errorf("message %q", err)
		}
	})
	t.Run("a commit signed with a gpg key the Secret lacks is UnknownKey naming the key", func(t *testing.T) {
		got, err := keys.Commit(r.commit("Bob was here", k.bob))
		e := wantRefused(t, got, err, UnknownKey, "")
		if e.Signer != k.bob.fpr {
			t.Errorf("Error.Signer %q, want Bob's fingerprint %s", e.Signer, k.bob.fpr)
		}
		if want := "signed by key " + k.bob.fpr + " which the trusted keys do not hold"; err.Error() != want {
			t.Errorf("message %q, want %q", err, want)
		}
	})
	t.Run("a commit signed with an ssh key the Secret lacks is UnknownKey naming its fingerprint", func(t *testing.T) {
		got, err := keys.Commit(r.commit("A stranger was here", k.stranger))
		e := wantRefused(t, got, err, UnknownKey, "")
		if e.Signer != k.stranger.fpr {
			t.Errorf("Error.Signer %q, want %s", e.Signer, k.stranger.fpr)
		}
	})
	t.Run("a gpg-signed commit whose message changed is BadSignature", func(t *testing.T) {
		raw := tamper(t, r.commit("Scale to three", k.alice), "Scale to three")
		got, err := keys.Commit(raw)
		wantRefused(t, got, err, BadSignature, alice.String())
		if want := "the signature by " + alice.String() + " does not verify"; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("message %q, want it to start with %q", err, want)
		}
	})
	t.Run("an ssh-signed commit whose message changed is BadSignature", func(t *testing.T) {
		raw := tamper(t, r.commit("Scale to four", k.ci), "Scale to four")
		got, err := keys.Commit(raw)
		wantRefused(t, got, err, BadSignature, ci.String())
	})
	t.Run("a gpg-signed commit whose header changed is BadSignature", func(t *testing.T) {
		raw := r.commit("Move the tree", k.alice)
		raw = bytes.Replace(raw, []byte("committer Committer"), []byte("committer Committed"), 1)
		got, err := keys.Commit(raw)
		wantRefused(t, got, err, BadSignature, alice.String())
	})
}

func TestCommitBound(t *testing.T) {
	t.Parallel()
	k := kit(t)
	keys := trusted(t)
	r := newRepo(t)
	// A message that brings the object just under MaxObject.
	raw := r.commit(strings.Repeat("m", MaxObject-2048)+"\n", k.alice)
	if len(raw) > MaxObject {
		t.Fatalf("the object is %d bytes, over MaxObject", len(raw))
	}

	t.Run("a signed commit just under MaxObject verifies", func(t *testing.T) {
		_, err := keys.Commit(raw)
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a commit over MaxObject is Unverifiable, signed or not", func(t *testing.T) {
		over := append(bytes.Clone(raw), bytes.Repeat([]byte("m"), MaxObject-len(raw)+1)...)
		got, err := keys.Commit(over)
		wantRefused(t, got, err, Unverifiable, "")
	})
}

func TestTag(t *testing.T) {
	t.Parallel()
	k := kit(t)
	keys := trusted(t)
	r := newRepo(t)
	r.commit("Release", nil)
	alice := Signer{Method: "openpgp", Identity: "Alice <alice@example.com>", Key: k.alice.fpr}
	ci := Signer{Method: "ssh", Identity: "ci@example.com", Key: k.ci.fpr}

	t.Run("a tag signed with gpg verifies", func(t *testing.T) {
		got, err := keys.Tag(r.tag("v1", "Version one", k.alice))
		wantSigner(t, got, err, alice)
	})
	t.Run("a tag signed with ssh verifies", func(t *testing.T) {
		got, err := keys.Tag(r.tag("v2", "Version two", k.ci))
		wantSigner(t, got, err, ci)
	})
	t.Run("an annotated tag that is not signed is Unsigned", func(t *testing.T) {
		got, err := keys.Tag(r.tag("v3", "Version three", nil))
		wantRefused(t, got, err, Unsigned, "")
	})
	t.Run("a signed tag whose message changed is BadSignature", func(t *testing.T) {
		got, err := keys.Tag(tamper(t, r.tag("v4", "Version four", k.alice), "Version four"))
		wantRefused(t, got, err, BadSignature, alice.String())
		got, err = keys.Tag(tamper(t, r.tag("v5", "Version five", k.ci), "Version five"))
		wantRefused(t, got, err, BadSignature, ci.String())
	})
	t.Run("a signed tag that names another commit is BadSignature", func(t *testing.T) {
		raw := r.tag("v6", "Version six", k.ci)
		other := strings.TrimSpace(string(r.git(nil, "hash-object", "-t", "blob", "--stdin")))
		raw = bytes.Replace(raw, raw[len("object "):len("object ")+40], []byte(other), 1)
		got, err := keys.Tag(raw)
		wantRefused(t, got, err, BadSignature, ci.String())
	})
	t.Run("a tag signed by a key the Secret lacks is UnknownKey", func(t *testing.T) {
		got, err := keys.Tag(r.tag("v7", "Version seven", k.bob))
		wantRefused(t, got, err, UnknownKey, k.bob.fpr)
	})
}

func TestCommitMalformed(t *testing.T) {
	t.Parallel()
	keys := mustParse(t, map[string][]byte{"signers": []byte("ci@example.com " + sshPublic(t, 1))})
	head := treeLine + authorLine + committerLine
	tests := []struct {
		name  string
		value string // of the gpgsig header
		want  Reason
		says  string
	}{
		{name: "an x509 signature", value: "-----BEGIN SIGNED MESSAGE-----\n MIIG\n -----END SIGNED MESSAGE-----\n", want: Unsupported, says: "x509"},
		{name: "a signature of no kind git knows", value: "hello\n", want: Unsupported, says: "does not know"},
		{name: "an OpenPGP armor that does not decode", value: "-----BEGIN PGP SIGNATURE-----\n \n !!!!\n -----END PGP SIGNATURE-----\n", want: Unverifiable},
		{name: "an OpenPGP armor without an END line", value: "-----BEGIN PGP SIGNATURE-----\n \n iHUE\n", want: Unverifiable, says: "no END line"},
		{name: "text after the END line", value: pgpValue + " more\n", want: Unverifiable, says: "follows"},
		{name: "an OpenPGP armor that holds no signature", value: "-----BEGIN PGP SIGNATURE-----\n \n -----END PGP SIGNATURE-----\n", want: Unverifiable},
		{name: "an SSH armor that does not decode", value: "-----BEGIN SSH SIGNATURE-----\n \x1b]0;title\x07\n -----END SSH SIGNATURE-----\n", want: Unverifiable},
		{name: "an SSH armor that holds no sshsig", value: "-----BEGIN SSH SIGNATURE-----\n U1NIU0lHAAAAAQ==\n -----END SSH SIGNATURE-----\n", want: Unverifiable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := keys.Commit([]byte(head + "gpgsig " + tt.value + "\nmessage\n"))
			wantRefused(t, got, err, tt.want, "")
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("message %q, want it to hold %q", err, tt.says)
			}
			if strings.ContainsAny(err.Error(), "\x1b\x07\n") {
				t.Errorf("message %q holds control characters", err)
			}
		})
	}
	t.Run("a nil Keys trusts no key", func(t *testing.T) {
		k := kit(t)
		var none *Keys
		got, err := none.Commit(newRepo(t).commit("Signed", k.bob))
		wantRefused(t, got, err, UnknownKey, k.bob.fpr)
		if none.Digest() != "" {
			t.Errorf("a nil Keys has digest %q", none.Digest())
		}
	})
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	k := kit(t)
	keys := trusted(t)
	r := newRepo(t)
	objects := [][]byte{r.commit("By Alice", k.alice), r.commit("By ci", k.ci)}

	var wg sync.WaitGroup
	errs := make(chan error, 8*len(objects))
	for range 8 {
		for _, raw := range objects {
			wg.Go(func() {
				if _, err := keys.Commit(raw); err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("refused when verified concurrently: %v", err)
	}
}
