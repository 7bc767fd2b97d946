package verify

import (
	"bytes"
	"testing"
)

func TestReadOpenPGP(t *testing.T) {
	t.Parallel()
	k := kit(t)

	t.Run("reads several keys in one block, and several blocks in one entry", func(t *testing.T) {
		both, err := k.gpg("--armor", "--export", k.alice.fpr, k.bob.fpr)
		if err != nil {
			t.Fatal(err)
		}
		for name, value := range map[string][]byte{
			"one block":  both,
			"two blocks": append(append(bytes.Clone(k.alice.public), '\n'), k.bob.public...),
		} {
			keys := mustParse(t, map[string][]byte{"keys": value})
			if len(keys.openpgp) != 2 {
				t.Errorf("%s: read %d OpenPGP keys, want 2", name, len(keys.openpgp))
			}
		}
	})
	t.Run("a key's signer is its primary user id and primary key, not the signing subkey", func(t *testing.T) {
		keys := mustParse(t, map[string][]byte{"alice.asc": k.alice.public})
		if n := len(keys.openpgp[0].Subkeys); n != 1 {
			t.Fatalf("Alice's key has %d subkeys, want 1", n)
		}
		want := Signer{Method: "openpgp", Identity: k.alice.uid, Key: k.alice.fpr}
		if got := openpgpSigner(keys.openpgp[0]); got != want {
			t.Errorf("signer %v, want %v", got, want)
		}
	})
}
