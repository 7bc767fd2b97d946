package verify

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// sshPublic is an ed25519 public key in authorized_keys form, made from seed
// without any tool.
func sshPublic(t testing.TB, seed byte) string {
	t.Helper()
	pub, err := ssh.NewPublicKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize)).Public())
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
}

func TestParseKeys(t *testing.T) {
	t.Parallel()
	k := kit(t)
	ci := "ci@example.com " + k.ci.public

	t.Run("tells OpenPGP keys from allowed_signers by content, not by name", func(t *testing.T) {
		keys := mustParse(t, map[string][]byte{"allowed_signers": k.alice.public, "keys.asc": []byte(ci)})
		if len(keys.openpgp) != 1 || len(keys.ssh) != 1 {
			t.Errorf("read %d OpenPGP keys and %d allowed signers, want 1 and 1", len(keys.openpgp), len(keys.ssh))
		}
	})
	t.Run("skips comments and empty lines of allowed_signers", func(t *testing.T) {
		keys := mustParse(t, map[string][]byte{"signers": []byte("# CI\n\n  \r\n" + ci + "\r\n# end\n")})
		if len(keys.ssh) != 1 {
			t.Errorf("read %d allowed signers, want 1", len(keys.ssh))
		}
	})
}

func TestParseKeysErrors(t *testing.T) {
	key := sshPublic(t, 1)
	blob := strings.Fields(key)[1]
	tests := []struct {
		name  string
		data  map[string]string
		entry string
		line  int
		says  string
	}{
		{
			name: "cert-authority", data: map[string]string{"signers": "# CI\n\nci@example.com cert-authority " + key},
			entry: "signers", line: 3, says: "certificates are not supported",
		},
		{
			name: "an unknown option", data: map[string]string{"signers": "ci@example.com restrict " + key},
			entry: "signers", line: 1, says: `option "restrict" is not supported`,
		},
		{
			name: "an option given twice", data: map[string]string{"signers": `ci@example.com namespaces="git",namespaces="file" ` + key},
			entry: "signers", line: 1, says: `option "namespaces" given twice`,
		},
		{
			name: "a namespace pattern", data: map[string]string{"signers": `ci@example.com namespaces="g*" ` + key},
			entry: "signers", line: 1, says: "namespace patterns are not supported",
		},
		{
			name: "a time of another form", data: map[string]string{"signers": `ci@example.com valid-after="2020-01-01" ` + key},
			entry: "signers", line: 1, says: "valid-after: want YYYYMMDD",
		},
		{
			name: "a date that does not exist", data: map[string]string{"signers": `ci@example.com valid-before="20201301" ` + key},
			entry: "signers", line: 1, says: "valid-before: not a date",
		},
		{
			name: "a key that does not decode", data: map[string]string{"signers": "ci@example.com ssh-ed25519 " + blob[:30] + "!!" + blob[32:]},
			entry: "signers", line: 1, says: "no SSH public key after the principals",
		},
		{
			name: "a line without principals", data: map[string]string{"signers": key},
			entry: "signers", line: 1, says: "no SSH public key after the principals",
		},
		{
			name: "principals alone", data: map[string]string{"signers": "ci@example.com\n"},
			entry: "signers", line: 1, says: "no SSH public key after the principals",
		},
		{
			name: "an unterminated quote", data: map[string]string{"signers": `"CI Bot ` + key},
			entry: "signers", line: 1, says: "unterminated quote",
		},
		{
			name: "an empty principal", data: map[string]string{"signers": "ci@example.com,, " + key},
			entry: "signers", line: 1, says: "an empty principal",
		},
		{
			name:  "the entry at fault among good ones",
			data:  map[string]string{"a": "ci@example.com " + key, "b": "ci@example.com " + key + "\nci@example.com valid-after=\"x\" " + key},
			entry: "b", line: 2, says: "valid-after",
		},
		{
			name: "an OpenPGP private key", data: map[string]string{"keys.asc": "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nxcLYBF\n-----END PGP PRIVATE KEY BLOCK-----\n"},
			entry: "keys.asc", says: "give public keys only",
		},
		{
			name: "a public key block that does not decode", data: map[string]string{"keys.asc": "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n" + blob + "\n-----END PGP PUBLIC KEY BLOCK-----\n"},
			entry: "keys.asc", says: "OpenPGP public key block 1",
		},
		{
			name: "a public key block without an END line", data: map[string]string{"keys.asc": "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQ\n"},
			entry: "keys.asc", says: "no END line",
		},
		{
			name: "an armored block that holds no key", data: map[string]string{"keys.asc": "-----BEGIN PGP SIGNATURE-----\n\niHUE\n-----END PGP SIGNATURE-----\n"},
			entry: "keys.asc", says: "not a public key block",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := map[string][]byte{}
			for name, value := range tt.data {
				data[name] = []byte(value)
			}
			keys, err := ParseKeys(data)
			var e *KeyError
			if !errors.As(err, &e) {
				t.Fatalf("want a *KeyError, got keys %v and error %v", keys, err)
			}
			if e.Entry != tt.entry || e.Line != tt.line {
				t.Errorf("names entry %q line %d, want %q line %d", e.Entry, e.Line, tt.entry, tt.line)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "entry "+tt.entry+": ") || !strings.Contains(msg, tt.says) {
				t.Errorf("message %q, want it to name entry %s and hold %q", msg, tt.entry, tt.says)
			}
			if strings.Contains(msg, blob[:16]) || strings.Contains(msg, "xcLYBF") {
				t.Errorf("message %q quotes key material", msg)
			}
		})
	}

	t.Run("data without any key", func(t *testing.T) {
		for _, data := range []map[string][]byte{nil, {"signers": []byte("# nobody yet\n\n")}} {
			if _, err := ParseKeys(data); !errors.Is(err, ErrNoKeys) {
				t.Errorf("ParseKeys(%q): %v, want ErrNoKeys", data, err)
			}
		}
	})
}

func TestDigest(t *testing.T) {
	t.Parallel()
	k := kit(t)
	ci, other := k.ci.public, sshPublic(t, 2)
	base := mustParse(t, map[string][]byte{
		"alice.asc":       k.alice.public,
		"allowed_signers": []byte("ci@example.com " + ci + "\n" + "ops@example.com namespaces=\"git\" " + other + "\n"),
	})
	if len(base.Digest()) != 64 {
		t.Fatalf("digest %q is not hex SHA-256", base.Digest())
	}
	// The same key, armored with a header gpg may add.
	withComment := bytes.Replace(k.alice.public, []byte("-----\n"), []byte("-----\nComment: Alice's key\n"), 1)

	t.Run("the same trust spelled otherwise has the same digest", func(t *testing.T) {
		same := mustParse(t, map[string][]byte{
			"z-signers": []byte("# ops\nops@example.com namespaces=git " + other + " a comment\n\n# ci\nci@example.com " + ci + " another comment\n"),
			"a-keys":    withComment,
		})
		if same.Digest() != base.Digest() {
			t.Errorf("digest %s, want %s", same.Digest(), base.Digest())
		}
	})
	changes := map[string]map[string][]byte{
		"another principal": {
			"alice.asc":       k.alice.public,
			"allowed_signers": []byte("cd@example.com " + ci + "\n" + "ops@example.com namespaces=\"git\" " + other + "\n"),
		},
		"another option": {
			"alice.asc":       k.alice.public,
			"allowed_signers": []byte("ci@example.com " + ci + "\n" + "ops@example.com namespaces=\"git,file\" " + other + "\n"),
		},
		"a key less": {
			"allowed_signers": []byte("ci@example.com " + ci + "\n" + "ops@example.com namespaces=\"git\" " + other + "\n"),
		},
		"a key more": {
			"alice.asc":       k.alice.public,
			"bob.asc":         k.bob.public,
			"allowed_signers": []byte("ci@example.com " + ci + "\n" + "ops@example.com namespaces=\"git\" " + other + "\n"),
		},
	}
	for name, data := range changes {
		t.Run(name+" changes the digest", func(t *testing.T) {
			if mustParse(t, data).Digest() == base.Digest() {
				t.Error("same digest")
			}
		})
	}
}
