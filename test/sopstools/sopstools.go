// Package sopstools encrypts test repositories with the real sops and age CLIs,
// as a user does: age-keygen makes a key, sops encrypts a file for its
// recipient. hack/sopstools.sh builds the pinned tools (`make sopstools`, which
// `make test` runs); tests find them in $TETHER_SOPS_TOOLS or the module's
// .tools/bin.
//
// Without the tools a test is skipped with a message saying how to build them,
// except under CI (the CI environment variable set), where it fails: CI must run
// every test, and `make test` builds the tools first.
package sopstools

import (
	"bytes"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
)

// Tools are the paths of the pinned CLIs.
type Tools struct {
	SOPS, Age, AgeKeygen string
}

// Find returns the tools, skipping (or under CI failing) tb when one is missing.
func Find(tb testing.TB) *Tools {
	tb.Helper()
	dir := os.Getenv("TETHER_SOPS_TOOLS")
	if dir == "" {
		dir = filepath.Join(moduleRoot(tb), ".tools", "bin")
	}
	t := &Tools{SOPS: filepath.Join(dir, "sops"), Age: filepath.Join(dir, "age"), AgeKeygen: filepath.Join(dir, "age-keygen")}
	for _, bin := range []string{t.SOPS, t.Age, t.AgeKeygen} {
		if _, err := os.Stat(bin); err != nil {
			msg := "the pinned sops and age CLIs are not built (" + bin + " is missing): `make sopstools` builds them, or set TETHER_SOPS_TOOLS to their directory"
			if os.Getenv("CI") != "" {
				tb.Fatal(msg)
			}
			tb.Skip(msg)
		}
	}
	return t
}

// AgeKey makes an age key with age-keygen and returns its identity file's
// content (what a keys Secret's *.agekey entry holds) and its recipient.
func (t *Tools) AgeKey(tb testing.TB) (identity, recipient string) {
	tb.Helper()
	out := t.run(tb, tb.TempDir(), nil, t.AgeKeygen)
	for line := range strings.SplitSeq(out, "\n") {
		if r, ok := strings.CutPrefix(line, "# public key: "); ok {
			return out, strings.TrimSpace(r)
		}
	}
	tb.Fatalf("age-keygen wrote no public key")
	return "", ""
}

// PGPKey makes an OpenPGP key and returns its public key as a binary keyring (what
// EncryptPGP takes), its armored private key (what a keys Secret's *.asc entry
// holds) and its fingerprint (40 upper-case hex digits, as sops names it).
func PGPKey(tb testing.TB) (pubring, private []byte, fingerprint string) {
	tb.Helper()
	entity, err := openpgp.NewEntity("tether test", "", "test@tether.dev", nil)
	if err != nil {
		tb.Fatal(err)
	}
	var public, armored bytes.Buffer
	if err := entity.Serialize(&public); err != nil {
		tb.Fatal(err)
	}
	w, err := armor.Encode(&armored, openpgp.PrivateKeyType, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if err := entity.SerializePrivate(w, nil); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return public.Bytes(), armored.Bytes(), strings.ToUpper(hex.EncodeToString(entity.PrimaryKey.Fingerprint))
}

// EncryptAge encrypts plaintext, the content of a file named name (its
// extension tells sops the format: .yaml, .json, .env, or anything else for
// binary), for the age recipients, with extra sops arguments (say
// "--encrypted-regex", "^(data|stringData)$"), and returns the SOPS file.
func (t *Tools) EncryptAge(tb testing.TB, name, plaintext string, recipients []string, extra ...string) string {
	tb.Helper()
	dir := tb.TempDir()
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, []byte(plaintext), 0o600); err != nil {
		tb.Fatal(err)
	}
	args := append([]string{"encrypt", "--age", strings.Join(recipients, ",")}, extra...)
	return t.run(tb, dir, nil, t.SOPS, append(args, file)...)
}

// EncryptPGP encrypts plaintext, as EncryptAge does, for the OpenPGP key with
// fingerprint (40 hex digits), whose public key pubring holds (a binary keyring,
// as openpgp's Entity.Serialize writes it). sops reads it from the pubring.gpg of
// a GNUPGHOME of the test's own; no gpg runs.
func (t *Tools) EncryptPGP(tb testing.TB, name, plaintext string, pubring []byte, fingerprint string, extra ...string) string {
	tb.Helper()
	dir := tb.TempDir()
	home := filepath.Join(dir, ".gnupg")
	if err := os.Mkdir(home, 0o700); err != nil {
		tb.Fatal(err)
	}
	file := filepath.Join(dir, name)
	for p, data := range map[string][]byte{filepath.Join(home, "pubring.gpg"): pubring, file: []byte(plaintext)} {
		if err := os.WriteFile(p, data, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	args := append([]string{"encrypt", "--pgp", fingerprint}, extra...)
	return t.run(tb, dir, nil, t.SOPS, append(args, file)...)
}

// Decrypt decrypts a SOPS file named name with the age identity, as a user
// checks a file.
func (t *Tools) Decrypt(tb testing.TB, name, encrypted, identity string) string {
	tb.Helper()
	dir := tb.TempDir()
	file := filepath.Join(dir, name)
	keys := filepath.Join(dir, "keys.txt")
	for p, data := range map[string]string{file: encrypted, keys: identity} {
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	return t.run(tb, dir, []string{"SOPS_AGE_KEY_FILE=" + keys}, t.SOPS, "decrypt", file)
}

// run runs a tool in dir with a bare environment (no key or keyring of the
// machine's), and returns its standard output.
func (t *Tools) run(tb testing.TB, dir string, env []string, bin string, args ...string) string {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"HOME=" + dir, "PATH=/usr/bin:/bin", "GNUPGHOME=" + filepath.Join(dir, ".gnupg")}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

func moduleRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for ; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if dir == filepath.Dir(dir) {
			tb.Fatal("no go.mod above the test's directory")
		}
	}
}
