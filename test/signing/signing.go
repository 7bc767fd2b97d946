// Package signing makes signing keys with the real gpg and ssh-keygen for the
// tests of signature verification (spec.source.verify), and says how git signs
// with them: a test signs its commits and tags as a user's git would, not with
// bytes it wrote itself.
//
// It also makes cosign keys (cosign.go), in process, and signs OCI artifacts
// with them as cosign v2 writes signatures, for the tests of OCI artifact
// verification: what a test pushes to a registry is what cosign would.
//
// `make test` installs gpg and ssh-keygen (Debian's gpg and openssh-client,
// hack/signing.sh) when a machine lacks them; a test that finds none fails
// saying so.
package signing

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// GPG is an OpenPGP signing key (ed25519, no passphrase) in a GNUPGHOME of its
// own, made by the real gpg.
type GPG struct {
	// Home is the key's GNUPGHOME: short, under the system's temporary
	// directory, since gpg-agent's socket path must fit in 108 bytes.
	Home string
	// Fingerprint is the key's upper-case hex fingerprint.
	Fingerprint string
	// Identity is "Name <email>".
	Identity string
	// Public is the armored public key, as a Secret of trusted keys holds it.
	Public []byte
}

// NewGPG makes a key for name and email. The gpg-agent it starts is stopped
// and its home removed when the test ends.
func NewGPG(tb testing.TB, name, email string) *GPG {
	tb.Helper()
	need(tb, "gpg")
	home, err := os.MkdirTemp("", "gpg")
	if err != nil {
		tb.Fatal(err)
	}
	g := &GPG{Home: home, Identity: name + " <" + email + ">"}
	tb.Cleanup(func() {
		_ = exec.Command("gpgconf", "--homedir", home, "--kill", "all").Run()
		_ = os.RemoveAll(home)
	})
	// gpg starts its agent as a daemon that keeps the standard output and
	// error it was started with: started from a command whose output is read
	// (gpg's own below, or git's, which runs gpg to sign), it holds that
	// command's pipes open, and reading them never ends. It is started first,
	// with no pipe to hold.
	if err := exec.Command("gpgconf", "--homedir", home, "--launch", "gpg-agent").Run(); err != nil {
		tb.Fatalf("gpgconf --homedir %s --launch gpg-agent: %v", home, err)
	}
	g.run(tb, "--quick-gen-key", g.Identity, "ed25519", "sign", "never")
	for _, line := range strings.Split(g.run(tb, "--with-colons", "--list-keys", email), "\n") {
		if fields := strings.Split(line, ":"); fields[0] == "fpr" && len(fields) > 9 {
			g.Fingerprint = fields[9]
			break
		}
	}
	if g.Fingerprint == "" {
		tb.Fatalf("gpg made a key for %s but lists no fingerprint", g.Identity)
	}
	g.Public = []byte(g.run(tb, "--armor", "--export", g.Fingerprint))
	return g
}

// Env is what git's environment needs to sign with the key.
func (g *GPG) Env() []string { return []string{"GNUPGHOME=" + g.Home} }

// GitConfig has git sign every commit and annotated tag with the key.
func (g *GPG) GitConfig() map[string]string {
	return map[string]string{"gpg.format": "openpgp", "user.signingkey": g.Fingerprint, "commit.gpgsign": "true", "tag.gpgsign": "true"}
}

func (g *GPG) run(tb testing.TB, args ...string) string {
	tb.Helper()
	args = append([]string{"--homedir", g.Home, "--batch", "--pinentry-mode", "loopback", "--passphrase", ""}, args...)
	return run(tb, "gpg", args...)
}

// SSH is an ed25519 SSH signing key without a passphrase, made by the real
// ssh-keygen.
type SSH struct {
	// KeyFile is the private key's path, which git's user.signingkey names.
	KeyFile string
	// Public is the public key as one authorized_keys line.
	Public string
	// Principal is who the key belongs to in allowed_signers.
	Principal string
}

// NewSSH makes a key for principal (an email address, as git's docs suggest).
func NewSSH(tb testing.TB, principal string) *SSH {
	tb.Helper()
	need(tb, "ssh-keygen")
	file := filepath.Join(tb.TempDir(), "id_ed25519")
	run(tb, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", principal, "-f", file)
	public, err := os.ReadFile(file + ".pub")
	if err != nil {
		tb.Fatal(err)
	}
	return &SSH{KeyFile: file, Public: strings.TrimSpace(string(public)), Principal: principal}
}

// AllowedSigners is the key's line of an allowed_signers file, with options
// (`namespaces="git"`, say) between the principal and the key when given.
func (s *SSH) AllowedSigners(options ...string) string {
	line := s.Principal
	if len(options) > 0 {
		line += " " + strings.Join(options, ",")
	}
	return line + " " + s.Public + "\n"
}

// GitConfig has git sign every commit and annotated tag with the key.
func (s *SSH) GitConfig() map[string]string {
	return map[string]string{"gpg.format": "ssh", "user.signingkey": s.KeyFile, "commit.gpgsign": "true", "tag.gpgsign": "true"}
}

// Unsigned has git stop signing.
func Unsigned() map[string]string {
	return map[string]string{"commit.gpgsign": "false", "tag.gpgsign": "false"}
}

func need(tb testing.TB, tool string) {
	tb.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		tb.Fatalf("%s is not installed: `make test` installs it (hack/signing.sh), or apt-get install gpg openssh-client", tool)
	}
}

func run(tb testing.TB, tool string, args ...string) string {
	tb.Helper()
	cmd := exec.Command(tool, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Should a daemon still hold the pipes, the command's end ends the reading.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		tb.Fatalf("%s %s: %v: %s", tool, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String())
}
