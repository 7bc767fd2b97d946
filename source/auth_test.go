package source_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
)

var main = v1alpha1.GitRef{Branch: "main"}

func TestFetchAuthenticatesOverHTTPS(t *testing.T) {
	srv := gitserver.Start(t, gitserver.Options{Username: "tether", Password: "s3cret-pass", BearerToken: "t0ken-value", TLS: true})
	repo := srv.CreateRepo(t, "private")
	head := repo.Commit(t, map[string]string{"app/cm.yaml": configMap("web", "hello")}, "add web")
	ca := srv.CACert()

	works := []struct {
		step string
		auth source.Auth
	}{
		{"username and password from the Secret reach the repository", source.Auth{Username: "tether", Password: "s3cret-pass", CAFile: ca}},
		{"a bearer token from the Secret reaches the repository", source.Auth{BearerToken: "t0ken-value", CAFile: ca}},
	}
	for _, w := range works {
		t.Run(w.step, func(t *testing.T) {
			before := repo.Requests()
			rev := fetch(t, newSource(t, source.Options{}), source.Request{URL: repo.URL(), Ref: main, Auth: w.auth})
			if rev.Commit != head {
				t.Errorf("revision = %s, want commit %s", rev, head)
			}
			if got := repo.Requests().Refused; got != before.Refused {
				t.Errorf("%d requests refused, want the credentials sent from the first request on", got-before.Refused)
			}
		})
	}

	failures := []struct {
		step   string
		auth   source.Auth
		reason string
	}{
		{"no credentials is AuthenticationFailed", source.Auth{CAFile: ca}, source.ReasonAuthenticationFailed},
		{"a wrong password is AuthenticationFailed", source.Auth{Username: "tether", Password: "wr0ng-pass", CAFile: ca}, source.ReasonAuthenticationFailed},
		{"a wrong token is AuthenticationFailed", source.Auth{BearerToken: "wr0ng-t0ken", CAFile: ca}, source.ReasonAuthenticationFailed},
		{"a certificate from an authority not in caFile is CertificateUntrusted", source.Auth{Username: "tether", Password: "s3cret-pass"}, source.ReasonCertificateUntrusted},
	}
	for _, f := range failures {
		t.Run(f.step+", and no secret shows", func(t *testing.T) {
			req := source.Request{URL: repo.URL(), Ref: main, Auth: f.auth}
			_, err := newSource(t, source.Options{}).Fetch(t.Context(), req)
			if reason := fetchReason(t, err); reason != f.reason {
				t.Errorf("reason = %s, want %s (error %v)", reason, f.reason, err)
			}
			assertNoSecrets(t, fmt.Sprintf("%v | %+v | %#v | %v", err, req, req, req.Auth), f.auth)
		})
	}
}

func TestFetchDoesNotShareAResolutionAcrossCredentials(t *testing.T) {
	srv := gitserver.Start(t, gitserver.Options{Username: "tether", Password: "s3cret-pass"})
	repo := srv.CreateRepo(t, "private")
	head := repo.Commit(t, map[string]string{"app/cm.yaml": configMap("web", "hello")}, "add web")
	src := newSource(t, source.Options{})
	good := source.Auth{Username: "tether", Password: "s3cret-pass"}
	fetch(t, src, source.Request{URL: repo.URL(), Ref: main, Auth: good, MaxAge: time.Hour})

	for _, other := range []struct {
		step string
		auth source.Auth
	}{{"a caller without credentials", source.Auth{}}, {"a caller with a wrong password", source.Auth{Username: "tether", Password: "nope"}}} {
		t.Run(other.step+" asks the remote, and is refused, within the MaxAge of a good resolution", func(t *testing.T) {
			for _, ref := range []v1alpha1.GitRef{main, {Commit: head}} {
				_, err := src.Fetch(t.Context(), source.Request{URL: repo.URL(), Ref: ref, Auth: other.auth, MaxAge: time.Hour})
				if reason := fetchReason(t, err); reason != source.ReasonAuthenticationFailed {
					t.Errorf("ref %+v: reason = %s, want %s (error %v)", ref, reason, source.ReasonAuthenticationFailed, err)
				}
			}
		})
	}

	t.Run("a caller with the same credentials shares the resolution", func(t *testing.T) {
		before := repo.Requests()
		fetch(t, src, source.Request{URL: repo.URL(), Ref: main, Auth: good, MaxAge: time.Hour})
		if diff := cmp.Diff(before, repo.Requests()); diff != "" {
			t.Errorf("requests (-before +after):\n%s", diff)
		}
	})
}

// sshRepo is a repository served over SSH to one authorized key.
type sshRepo struct {
	repo     *gitserver.Repo
	server   *gitserver.SSHServer
	url      string
	identity []byte
	head     string
}

func newSSHRepo(t *testing.T) sshRepo {
	t.Helper()
	srv := gitserver.Start(t, gitserver.Options{})
	identity, signer := gitserver.NewSSHKey(t)
	server := srv.StartSSH(t, gitserver.SSHOptions{AuthorizedKeys: []ssh.PublicKey{signer.PublicKey()}})
	repo := srv.CreateRepo(t, "org/deploy")
	head := repo.Commit(t, map[string]string{"app/cm.yaml": configMap("web", "over-ssh")}, "add web")
	return sshRepo{repo: repo, server: server, url: server.URL("org/deploy"), identity: identity, head: head}
}

func TestFetchOverSSHVerifiesTheHostKey(t *testing.T) {
	r := newSSHRepo(t)
	_, otherHost := gitserver.NewSSHKey(t)
	otherIdentity, _ := gitserver.NewSSHKey(t)
	addr := strings.TrimSuffix(strings.TrimPrefix(r.url, "ssh://git@"), "/org/deploy.git")

	t.Run("a host key listed in known_hosts is accepted, and the commit renders", func(t *testing.T) {
		src := newSource(t, source.Options{})
		rev := fetch(t, src, source.Request{URL: r.url, Ref: main, Auth: source.Auth{Identity: r.identity, KnownHosts: r.server.KnownHosts()}})
		if rev.Commit != r.head {
			t.Errorf("revision = %s, want commit %s", rev, r.head)
		}
		if diff := cmp.Diff([]string{"ConfigMap/web greeting=over-ssh"}, rendered(t, src, rev, "app")); diff != "" {
			t.Errorf("objects (-want +got):\n%s", diff)
		}
	})

	failures := []struct {
		step       string
		auth       source.Auth
		reason     string
		says       string
		noSessions bool // refused before any git session was opened
	}{
		{"a different key for the host is HostKeyMismatch", source.Auth{Identity: r.identity, KnownHosts: gitserver.KnownHostsLine(addr, otherHost.PublicKey())},
			source.ReasonHostKeyMismatch, "key mismatch", true},
		{"known_hosts without the host is HostKeyUnknown", source.Auth{Identity: r.identity, KnownHosts: gitserver.KnownHostsLine("127.0.0.2:22", otherHost.PublicKey())},
			source.ReasonHostKeyUnknown, "key is unknown", true},
		{"no known_hosts at all is HostKeyUnknown, before connecting", source.Auth{Identity: r.identity},
			source.ReasonHostKeyUnknown, "host keys are always verified", true},
		{"a key the server does not authorize is AuthenticationFailed", source.Auth{Identity: otherIdentity, KnownHosts: r.server.KnownHosts()},
			source.ReasonAuthenticationFailed, "unable to authenticate", true},
		{"an identity that is not a key is InvalidCredentials", source.Auth{Identity: []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nbm90LWEta2V5LXNlY3JldA==\n-----END OPENSSH PRIVATE KEY-----\n"), KnownHosts: r.server.KnownHosts()},
			source.ReasonInvalidCredentials, "SSH identity", true},
		{"no identity is InvalidCredentials", source.Auth{KnownHosts: r.server.KnownHosts()},
			source.ReasonInvalidCredentials, "needs an identity", true},
	}
	for _, f := range failures {
		t.Run(f.step, func(t *testing.T) {
			before := r.repo.Requests()
			_, err := newSource(t, source.Options{}).Fetch(t.Context(), source.Request{URL: r.url, Ref: main, Auth: f.auth})
			if reason := fetchReason(t, err); reason != f.reason || !strings.Contains(err.Error(), f.says) {
				t.Errorf("error %q (reason %s), want reason %s saying %q", err, reason, f.reason, f.says)
			}
			if got := r.repo.Requests(); f.noSessions && got.RefListings != before.RefListings {
				t.Errorf("git sessions went from %d to %d, want none", before.RefListings, got.RefListings)
			}
			assertNoSecrets(t, err.Error(), f.auth)
		})
	}
}

func TestFetchAcceptsTheSCPLikeSSHForm(t *testing.T) {
	// Only parsing is at stake: git@host:path has no port, so it cannot reach the
	// test server; the refusal must come from the host key check, not the URL.
	_, err := newSource(t, source.Options{}).Fetch(t.Context(), source.Request{URL: "git@127.0.0.1:org/deploy.git", Ref: main})
	if reason := fetchReason(t, err); reason != source.ReasonHostKeyUnknown {
		t.Errorf("reason = %s, want %s (error %v)", reason, source.ReasonHostKeyUnknown, err)
	}
}

// assertNoSecrets fails if text shows any secret value of auth.
func assertNoSecrets(t *testing.T, text string, auth source.Auth) {
	t.Helper()
	for _, secret := range []string{auth.Password, auth.BearerToken, string(auth.Identity)} {
		if secret != "" && strings.Contains(text, secret) {
			t.Errorf("%q shows a secret value", text)
		}
	}
	if len(auth.Identity) > 0 {
		// Any line of the key's body would give part of it away.
		for _, line := range strings.Split(string(auth.Identity), "\n") {
			if len(line) > 16 && !strings.HasPrefix(line, "-----") && strings.Contains(text, line) {
				t.Errorf("%q shows a line of the SSH identity", text)
			}
		}
	}
}
