package verify

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The tests sign with the real tools, git 2.39, gpg 2.2 and ssh-keygen, so
// that what is verified is what git writes. Their keys are made once per test
// binary (tools) and removed by TestMain.

func TestMain(m *testing.M) {
	code := m.Run()
	tools.cleanup()
	os.Exit(code)
}

// gpgKey is an OpenPGP key in the test GNUPGHOME.
type gpgKey struct {
	uid    string // "Alice <alice@example.com>"
	fpr    string // primary key fingerprint, as gpg lists it
	public []byte // armored public key, as gpg exports it
}

// sshKey is an SSH key pair on disk.
type sshKey struct {
	private string // path of the private key file
	public  string // "ssh-ed25519 AAAA… comment"
	fpr     string // "SHA256:…", as ssh-keygen -l prints it
}

// toolkit holds the keys every test signs with.
type toolkit struct {
	once sync.Once
	err  error

	gnupgHome string // short: gpg-agent's socket lives there
	dir       string // ssh keys, gpg wrappers

	alice   gpgKey // signs with a subkey
	bob     gpgKey // not among the trusted keys
	old     gpgKey // made 2020-01-01, expired 2021-01-01
	mallory gpgKey // made 2019-01-01; revoked by the test that uses it

	ci, stranger sshKey
}

var tools toolkit

// kit returns the test keys, making them on first use. A missing tool fails
// the test: make test installs them.
func kit(t testing.TB) *toolkit {
	t.Helper()
	tools.once.Do(func() { tools.err = tools.make() })
	if tools.err != nil {
		t.Fatal(tools.err)
	}
	return &tools
}

func (k *toolkit) make() error {
	for _, tool := range []string{"git", "gpg", "gpgconf", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not installed; `make test` installs it: %w", tool, err)
		}
	}
	var err error
	if k.gnupgHome, err = os.MkdirTemp("", "gpg"); err != nil {
		return err
	}
	if k.dir, err = os.MkdirTemp("", "verify"); err != nil {
		return err
	}
	if k.alice, err = k.gpgKey(keySpec{name: "Alice", subkey: true}); err != nil {
		return err
	}
	if k.bob, err = k.gpgKey(keySpec{name: "Bob"}); err != nil {
		return err
	}
	if k.old, err = k.gpgKey(keySpec{name: "Old", faked: "20200101T000000", expire: "1y"}); err != nil {
		return err
	}
	if k.mallory, err = k.gpgKey(keySpec{name: "Mallory", faked: "20190101T000000"}); err != nil {
		return err
	}
	if k.ci, err = k.sshKey("ci"); err != nil {
		return err
	}
	k.stranger, err = k.sshKey("stranger")
	return err
}

func (k *toolkit) cleanup() {
	if k.gnupgHome != "" {
		cmd := exec.Command("gpgconf", "--kill", "all")
		cmd.Env = append(os.Environ(), "GNUPGHOME="+k.gnupgHome)
		_ = cmd.Run()
		_ = os.RemoveAll(k.gnupgHome)
	}
	if k.dir != "" {
		_ = os.RemoveAll(k.dir)
	}
}

// keySpec says what gpg key to make.
type keySpec struct {
	name   string // the email is name@example.com, in lower case
	faked  string // the time it is made at, gpg's YYYYMMDDThhmmss; "" is now
	expire string // gpg's Expire-Date; "" never
	subkey bool   // the primary key only certifies, and a subkey signs
}

// gpgKey makes an ed25519 key without a passphrase.
func (k *toolkit) gpgKey(spec keySpec) (gpgKey, error) {
	email := strings.ToLower(spec.name) + "@example.com"
	params := []string{"%no-protection", "Key-Type: eddsa", "Key-Curve: ed25519"}
	if spec.subkey {
		params = append(params, "Key-Usage: cert", "Subkey-Type: eddsa", "Subkey-Curve: ed25519", "Subkey-Usage: sign")
	} else {
		params = append(params, "Key-Usage: sign")
	}
	expire := spec.expire
	if expire == "" {
		expire = "0"
	}
	params = append(params, "Name-Real: "+spec.name, "Name-Email: "+email, "Expire-Date: "+expire, "%commit", "")
	args := []string{"--batch", "--pinentry-mode", "loopback", "--passphrase", ""}
	if spec.faked != "" {
		args = append(args, "--faked-system-time", spec.faked)
	}
	if _, err := k.gpgIn(strings.Join(params, "\n"), append(args, "--gen-key")...); err != nil {
		return gpgKey{}, err
	}
	key := gpgKey{uid: spec.name + " <" + email + ">"}
	var err error
	if key.fpr, err = k.fingerprint(email); err != nil {
		return gpgKey{}, err
	}
	key.public, err = k.gpg("--armor", "--export", key.fpr)
	return key, err
}

// fingerprint is the primary key's fingerprint, from gpg's colon listing.
func (k *toolkit) fingerprint(email string) (string, error) {
	out, err := k.gpg("--with-colons", "--list-keys", email)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(out), "\n") {
		if fields := strings.Split(line, ":"); fields[0] == "fpr" && len(fields) > 9 {
			return fields[9], nil
		}
	}
	return "", fmt.Errorf("gpg lists no fingerprint for %s", email)
}

// revoke revokes a key today (the certificate gpg made with the key carries
// the key's own date), and returns its public key as exported after that.
func (k *toolkit) revoke(key gpgKey) ([]byte, error) {
	// revkey, sure, reason 0 (none given), no description, confirm, save.
	answers := "revkey\ny\n0\n\ny\nsave\n"
	if _, err := k.gpgIn(answers, "--batch", "--command-fd", "0", "--pinentry-mode", "loopback", "--passphrase", "", "--edit-key", key.fpr); err != nil {
		return nil, err
	}
	return k.gpg("--armor", "--export", key.fpr)
}

func (k *toolkit) gpg(args ...string) ([]byte, error) { return k.gpgIn("", args...) }

func (k *toolkit) gpgIn(stdin string, args ...string) ([]byte, error) {
	return run(exec.Command("gpg", args...), stdin, "GNUPGHOME="+k.gnupgHome)
}

// at is key signing through a gpg.program for git that fakes the time
// (gpg's YYYYMMDDThhmmss).
func (k *toolkit) at(t testing.TB, key gpgKey, faked string) fakedGPG {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gpg-"+faked)
	script := "#!/bin/sh\nexec gpg --faked-system-time " + faked + " \"$@\"\n"
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return fakedGPG{key: key, program: path}
}

// detachSign signs data as gpg does for git, outside git.
func (k *toolkit) detachSign(t testing.TB, key gpgKey, data []byte) []byte {
	t.Helper()
	sig, err := k.gpgIn(string(data), "--batch", "--armor", "--detach-sign", "--local-user", key.fpr)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// sshSign signs data in namespace as ssh-keygen does for git, outside git.
func (k *toolkit) sshSign(t testing.TB, key sshKey, namespace string, data []byte) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "payload")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := run(exec.Command("ssh-keygen", "-Y", "sign", "-n", namespace, "-f", key.private, path), ""); err != nil {
		t.Fatal(err)
	}
	sig, err := os.ReadFile(path + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// withHeader inserts a header into a raw commit, after its last header line,
// as git writes a gpgsig header: the value's lines after the first start with
// one space.
func withHeader(raw []byte, name string, value []byte) []byte {
	end := bytes.Index(raw, []byte("\n\n")) + 1
	lines := strings.Split(strings.TrimSuffix(string(value), "\n"), "\n")
	header := name + " " + strings.Join(lines, "\n ") + "\n"
	return append(append(bytes.Clone(raw[:end]), header...), raw[end:]...)
}

func (k *toolkit) sshKey(name string) (sshKey, error) {
	path := filepath.Join(k.dir, name)
	email := name + "@example.com"
	if _, err := run(exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", email, "-f", path), ""); err != nil {
		return sshKey{}, err
	}
	public, err := os.ReadFile(path + ".pub")
	if err != nil {
		return sshKey{}, err
	}
	out, err := run(exec.Command("ssh-keygen", "-l", "-E", "sha256", "-f", path+".pub"), "")
	if err != nil {
		return sshKey{}, err
	}
	fields := strings.Fields(string(out))
	if len(fields) < 2 {
		return sshKey{}, fmt.Errorf("ssh-keygen -l printed %q", out)
	}
	return sshKey{private: path, public: strings.TrimSpace(string(public)), fpr: fields[1]}, nil
}

// run runs a command with extra environment and returns its standard output.
func run(cmd *exec.Cmd, stdin string, env ...string) ([]byte, error) {
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// repo is a git repository in a test's temporary directory.
type repo struct {
	t   testing.TB
	kit *toolkit
	dir string
}

func newRepo(t testing.TB) *repo {
	t.Helper()
	r := &repo{t: t, kit: kit(t), dir: t.TempDir()}
	r.git(nil, "init", "-q", "-b", "main")
	return r
}

// git runs git in the repository, isolated from the machine's configuration.
func (r *repo) git(env []string, args ...string) []byte {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=Committer", "-c", "user.email=committer@example.com"}, args...)...)
	cmd.Dir = r.dir
	env = append([]string{
		"GNUPGHOME=" + r.kit.gnupgHome, "HOME=" + r.dir,
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
	}, env...)
	out, err := run(cmd, "", env...)
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// fakedGPG signs with a gpg key through a gpg.program that fakes the time.
type fakedGPG struct {
	key     gpgKey
	program string
}

// signing are git's options for signing with a key: a gpgKey's fingerprint
// or an sshKey's private key file.
func signing(key any) []string {
	switch key := key.(type) {
	case gpgKey:
		return []string{"-c", "gpg.program=gpg", "-c", "user.signingkey=" + key.fpr}
	case fakedGPG:
		return []string{"-c", "gpg.program=" + key.program, "-c", "user.signingkey=" + key.key.fpr}
	case sshKey:
		return []string{"-c", "gpg.format=ssh", "-c", "user.signingkey=" + key.private}
	}
	return nil
}

// commit commits with message, signed with key unless it is nil, and returns
// the raw commit object.
func (r *repo) commit(message string, key any, env ...string) []byte {
	r.t.Helper()
	// A file, not -m: a message may be longer than an argument may be.
	msg := filepath.Join(r.dir, ".git", "MESSAGE")
	if err := os.WriteFile(msg, []byte(message), 0o600); err != nil {
		r.t.Fatal(err)
	}
	args := append(signing(key), "commit", "-q", "--allow-empty", "--cleanup=verbatim", "-F", msg)
	if key != nil {
		args = append(args, "-S")
	}
	r.git(env, args...)
	return r.git(nil, "cat-file", "commit", "HEAD")
}

// tag makes an annotated tag of HEAD, signed with key unless it is nil, and
// returns the raw tag object.
func (r *repo) tag(name, message string, key any) []byte {
	r.t.Helper()
	args := append(signing(key), "tag", "-m", message)
	if key != nil {
		args = append(args, "-s")
	}
	r.git(nil, append(args, name)...)
	return r.git(nil, "cat-file", "tag", name)
}
