package webhook_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"tether.dev/tether/source/result"
	"tether.dev/tether/source/webhook"
)

// receiverSecrets are the secrets of the test receivers; gitea is left disabled in
// the tests that say so.
var receiverSecrets = map[string][]byte{
	webhook.ReceiverGitHub:  []byte("github-hook-secret"),
	webhook.ReceiverGitLab:  []byte("gitlab-hook-token"),
	webhook.ReceiverGitea:   []byte("gitea-hook-secret"),
	webhook.ReceiverGeneric: []byte("generic-hook-secret"),
}

// hookServer serves the webhook receiver and records the pushes it accepts.
type hookServer struct {
	url    string
	pushes []webhook.Push
}

func startHookServer(t *testing.T, secrets map[string][]byte) *hookServer {
	t.Helper()
	h := &hookServer{}
	opts := webhook.DefaultOptions()
	opts.MaxBodyBytes = 64 << 10
	opts.Secret = func(r string) []byte { return secrets[r] }
	opts.OnPush = func(_ context.Context, p webhook.Push) error {
		h.pushes = append(h.pushes, p)
		return nil
	}
	srv := httptest.NewServer(webhook.NewHandler(opts))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// post sends body to receiver with headers and returns the status code.
func (h *hookServer) post(t *testing.T, receiver string, body []byte, headers map[string]string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, h.url+webhook.PathPrefix+receiver, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// signed returns the headers with which a host sends body to receiver.
func signed(receiver, event string, body, secret []byte) map[string]string {
	sig := hex.EncodeToString(webhook.Sign(body, secret))
	switch receiver {
	case webhook.ReceiverGitHub:
		return map[string]string{"X-GitHub-Event": event, "X-Hub-Signature-256": "sha256=" + sig}
	case webhook.ReceiverGitea:
		return map[string]string{"X-Gitea-Event": event, "X-Gitea-Signature": sig}
	case webhook.ReceiverGitLab:
		return map[string]string{"X-Gitlab-Event": event, "X-Gitlab-Token": string(secret)}
	}
	return map[string]string{"X-Tether-Signature": "sha256=" + sig}
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "webhooks", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestWebhookAcceptsSignedPushes(t *testing.T) {
	pushes := []struct {
		step, receiver, event, fixture string
		want                           webhook.Push
	}{
		{"a GitHub branch push names the repository in every form", webhook.ReceiverGitHub, "push", "github-push.json",
			webhook.Push{URLs: []string{"github.com/octo-org/deploy"}, Branch: "main"}},
		{"a GitHub tag push names the tag", webhook.ReceiverGitHub, "push", "github-tag.json",
			webhook.Push{URLs: []string{"github.com/octo-org/deploy"}, Tag: "v1.4.0"}},
		{"a GitLab push hook", webhook.ReceiverGitLab, "Push Hook", "gitlab-push.json",
			webhook.Push{URLs: []string{"gitlab.example.com/platform/deploy"}, Branch: "main"}},
		{"a GitLab tag push hook", webhook.ReceiverGitLab, "Tag Push Hook", "gitlab-tag.json",
			webhook.Push{URLs: []string{"gitlab.example.com/platform/deploy"}, Tag: "v2.0.0"}},
		{"a Gitea push", webhook.ReceiverGitea, "push", "gitea-push.json",
			webhook.Push{URLs: []string{"gitea.example.com/ops/deploy"}, Branch: "staging"}},
		{"a generic push", webhook.ReceiverGeneric, "", "",
			webhook.Push{URLs: []string{"git.example.com/team/app"}, Branch: "release"}},
	}
	for _, p := range pushes {
		t.Run(p.step, func(t *testing.T) {
			h := startHookServer(t, receiverSecrets)
			body := []byte(`{"url": "ssh://git@git.example.com/team/app.git", "branch": "release"}`)
			if p.fixture != "" {
				body = readFixture(t, p.fixture)
			}
			if code := h.post(t, p.receiver, body, signed(p.receiver, p.event, body, receiverSecrets[p.receiver])); code != http.StatusAccepted {
				t.Fatalf("status = %d, want 202", code)
			}
			if diff := cmp.Diff([]webhook.Push{p.want}, h.pushes); diff != "" {
				t.Errorf("pushes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWebhookRefusesWhatIsNotAnAuthenticatedPush(t *testing.T) {
	github := readFixture(t, "github-push.json")
	secret := receiverSecrets[webhook.ReceiverGitHub]
	wrong := []byte("not-the-secret")
	big := bytes.Repeat([]byte(" "), 65<<10)
	noGitea := map[string][]byte{}
	for k, v := range receiverSecrets {
		if k != webhook.ReceiverGitea {
			noGitea[k] = v
		}
	}
	refusals := []struct {
		step     string
		receiver string
		body     []byte
		headers  map[string]string
		want     int
	}{
		{"an unsigned GitHub push is 401", webhook.ReceiverGitHub, github, map[string]string{"X-GitHub-Event": "push"}, http.StatusUnauthorized},
		{"a GitHub push signed with another secret is 401", webhook.ReceiverGitHub, github, signed(webhook.ReceiverGitHub, "push", github, wrong), http.StatusUnauthorized},
		{"a GitHub signature of another body is 401", webhook.ReceiverGitHub, github, signed(webhook.ReceiverGitHub, "push", []byte("{}"), secret), http.StatusUnauthorized},
		{"a signature that is not hex is 401", webhook.ReceiverGitHub, github, map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=zz"}, http.StatusUnauthorized},
		{"a GitLab push with a wrong token is 401", webhook.ReceiverGitLab, github, signed(webhook.ReceiverGitLab, "Push Hook", github, wrong), http.StatusUnauthorized},
		{"a Gitea push signed with another secret is 401", webhook.ReceiverGitea, github, signed(webhook.ReceiverGitea, "push", github, wrong), http.StatusUnauthorized},
		{"an unsigned generic push is 401", webhook.ReceiverGeneric, []byte(`{"url": "https://h/o/r", "branch": "main"}`), nil, http.StatusUnauthorized},
		{"a receiver without a secret is 404, even when signed", "gitea-disabled", github, signed(webhook.ReceiverGitea, "push", github, receiverSecrets[webhook.ReceiverGitea]), http.StatusNotFound},
		{"an unknown receiver is 404", "bitbucket", github, nil, http.StatusNotFound},
		{"a signed body over the limit is 413", webhook.ReceiverGitHub, big, signed(webhook.ReceiverGitHub, "push", big, secret), http.StatusRequestEntityTooLarge},
		{"a signed ping is 200 and no work", webhook.ReceiverGitHub, readFixture(t, "github-ping.json"), signed(webhook.ReceiverGitHub, "ping", readFixture(t, "github-ping.json"), secret), http.StatusOK},
		{"a signed push that names no branch is 400", webhook.ReceiverGeneric, []byte(`{"url": "https://h/o/r"}`), signed(webhook.ReceiverGeneric, "", []byte(`{"url": "https://h/o/r"}`), receiverSecrets[webhook.ReceiverGeneric]), http.StatusBadRequest},
	}
	for _, r := range refusals {
		t.Run(r.step, func(t *testing.T) {
			h, receiver := startHookServer(t, receiverSecrets), r.receiver
			if receiver == "gitea-disabled" {
				h, receiver = startHookServer(t, noGitea), webhook.ReceiverGitea
			}
			if code := h.post(t, receiver, r.body, r.headers); code != r.want {
				t.Errorf("status = %d, want %d", code, r.want)
			}
			if len(h.pushes) != 0 {
				t.Errorf("pushes = %v, want none", h.pushes)
			}
		})
	}

	t.Run("a GET is 405", func(t *testing.T) {
		h := startHookServer(t, receiverSecrets)
		resp, err := http.Get(h.url + webhook.PathPrefix + webhook.ReceiverGitHub)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || len(h.pushes) != 0 {
			t.Errorf("status = %d with %d pushes, want 405 and none", resp.StatusCode, len(h.pushes))
		}
	})
}

func TestWebhookRefusesBeforeReadingWhatCannotBeAuthentic(t *testing.T) {
	opts := webhook.DefaultOptions()
	opts.MaxBodyBytes = 64 << 10
	hook := startCountingHook(t, opts)
	h := &hookServer{url: hook.url}
	push := readFixture(t, "github-push.json")
	gitlab := readFixture(t, "gitlab-push.json")
	wrong := []byte("not-the-secret")
	refusals := []struct {
		step     string
		receiver string
		body     []byte
		headers  map[string]string
		want     int
	}{
		{"a GitLab push with a wrong token is 401, unread", webhook.ReceiverGitLab, gitlab, signed(webhook.ReceiverGitLab, "Push Hook", gitlab, wrong), http.StatusUnauthorized},
		{"a GitLab push without a token is 401, unread", webhook.ReceiverGitLab, gitlab, map[string]string{"X-Gitlab-Event": "Push Hook"}, http.StatusUnauthorized},
		{"a GitHub push without a signature is 401, unread", webhook.ReceiverGitHub, push, map[string]string{"X-GitHub-Event": "push"}, http.StatusUnauthorized},
		{"a GitHub signature that is not a SHA-256 is 401, unread", webhook.ReceiverGitHub, push, map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=abcd"}, http.StatusUnauthorized},
		{"a Gitea push without a signature is 401, unread", webhook.ReceiverGitea, push, map[string]string{"X-Gitea-Event": "push"}, http.StatusUnauthorized},
		{"a generic push without a signature is 401, unread", webhook.ReceiverGeneric, []byte(`{"url": "https://h/o/r", "branch": "main"}`), nil, http.StatusUnauthorized},
		{"a signed body whose Content-Length is over the limit is 413, unread", webhook.ReceiverGitHub, bytes.Repeat([]byte(" "), 65<<10), signed(webhook.ReceiverGitHub, "push", bytes.Repeat([]byte(" "), 65<<10), hook.secret), http.StatusRequestEntityTooLarge},
	}
	for i, r := range refusals {
		t.Run(r.step, func(t *testing.T) {
			if code := h.post(t, r.receiver, r.body, r.headers); code != r.want {
				t.Errorf("status = %d, want %d", code, r.want)
			}
			hook.waitFor(t, "the answer counted", func() bool { return hook.answered == i+1 })
			hook.mu.Lock()
			defer hook.mu.Unlock()
			if hook.answeredUnread != i+1 {
				t.Errorf("the receiver read the body (peak %d bytes read at once so far), want none of it read", hook.peakBytes)
			}
		})
	}
	if hook.pushes != 0 {
		t.Errorf("pushes = %d, want none", hook.pushes)
	}
}

func TestSecretsDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "github"), "s3cret\n")
	writeFile(t, filepath.Join(dir, "gitlab"), "  \n")
	secrets := webhook.SecretsDir(dir)

	got := map[string]string{}
	for _, r := range append(webhook.Receivers, "../etc/passwd") {
		if s := secrets(r); s != nil {
			got[r] = string(s)
		}
	}
	if diff := cmp.Diff(map[string]string{"github": "s3cret"}, got); diff != "" {
		t.Errorf("secrets (-want +got):\n%s", diff)
	}
	t.Run("a rotated secret takes effect at once", func(t *testing.T) {
		writeFile(t, filepath.Join(dir, "github"), "rotated")
		if got := string(secrets("github")); got != "rotated" {
			t.Errorf("secret = %q, want rotated", got)
		}
	})
}

func TestNormalizeURL(t *testing.T) {
	same := []string{
		"https://github.com/org/app.git",
		"https://GitHub.com/Org/App",
		"https://user:token@github.com/org/app.git/",
		"http://github.com:80/org/app",
		"ssh://git@github.com/org/app.git",
		"ssh://git@github.com:22/org/app",
		"git@github.com:org/app.git",
		"git@github.com:/org/app.git",
		" https://github.com/org/app.git ",
	}
	for _, u := range same {
		if got := result.NormalizeURL(u); got != "github.com/org/app" {
			t.Errorf("NormalizeURL(%q) = %q, want github.com/org/app", u, got)
		}
	}
	for _, u := range []string{"", "github.com/org/app", "not a url", "https://github.com/", "file://"} {
		if got := result.NormalizeURL(u); got != "" {
			t.Errorf("NormalizeURL(%q) = %q, want \"\"", u, got)
		}
	}
	if got := result.NormalizeURL("file:///srv/git/app.git"); got != "/srv/git/app" {
		t.Errorf("NormalizeURL(file URL) = %q, want /srv/git/app", got)
	}
}

func FuzzParsePush(f *testing.F) {
	for _, name := range []string{"github-push.json", "github-tag.json", "github-ping.json", "gitlab-push.json", "gitlab-tag.json", "gitea-push.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", "webhooks", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"url": "git@h:o/r.git", "branch": "main"}`))
	f.Add([]byte(`{"url": "https://h/o/r", "tag": "v1", "branch": "x"}`))
	f.Add([]byte(`{"ref": "refs/heads/", "repository": {"clone_url": "::"}}`))
	events := map[string][]string{
		webhook.ReceiverGitHub: {"push"}, webhook.ReceiverGitea: {"push"},
		webhook.ReceiverGitLab: {"Push Hook", "Tag Push Hook"}, webhook.ReceiverGeneric: {""},
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for receiver, evs := range events {
			for _, event := range evs {
				p, err := webhook.ParsePush(receiver, event, body)
				if err != nil {
					continue
				}
				if (p.Branch == "") == (p.Tag == "") {
					t.Fatalf("%s: push %+v names not exactly one of branch and tag", receiver, p)
				}
				if len(p.URLs) == 0 {
					t.Fatalf("%s: push %+v names no URL", receiver, p)
				}
				for _, u := range p.URLs {
					if !normalised(u) {
						t.Fatalf("%s: URL %q is not normalised", receiver, u)
					}
				}
			}
		}
	})
}

func FuzzNormalizeURL(f *testing.F) {
	for _, u := range []string{"https://github.com/org/app.git", "git@h:o/r", "ssh://git@[::1]:22/r.git", "file:///x/.git/.git", "https://h/a.git/.git/"} {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n := result.NormalizeURL(raw)
		if n != "" && !normalised(n) {
			t.Fatalf("NormalizeURL(%q) = %q is not normalised", raw, n)
		}
	})
}

// hasScheme matches a URL that still starts with its scheme.
var hasScheme = regexp.MustCompile(`^[a-z][a-z0-9+.-]*://`)

// normalised reports whether u has the form NormalizeURL gives.
func normalised(u string) bool {
	return u != "" && u == strings.ToLower(u) && !strings.HasSuffix(u, ".git") && !strings.HasSuffix(u, "/") && !hasScheme.MatchString(u)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A registry's notification, as CNCF Distribution sends it: an envelope of
// events, the push of a blob (no tag), of a tagged manifest, and a pull.
const registryEvents = `{"events":[
 {"id":"1","action":"push","target":{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:aa","repository":"org/app"},"request":{"host":"registry.example.com"}},
 {"id":"2","action":"push","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:bb","repository":"org/app","url":"https://registry.example.com:5000/v2/org/app/manifests/sha256:bb","tag":"v1.2.0"},"request":{"host":"Registry.Example.com"}},
 {"id":"3","action":"pull","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","repository":"org/other","tag":"v9"},"request":{"host":"registry.example.com"}}
]}`

func TestARegistrysNotificationIsATagPushOnceItsTokenIsChecked(t *testing.T) {
	h := startHookServer(t, map[string][]byte{webhook.ReceiverRegistry: []byte("registry-token")})
	body := []byte(registryEvents)
	for name, headers := range map[string]map[string]string{
		"no header":   nil,
		"wrong token": {"Authorization": "Bearer nope"},
		"empty":       {"Authorization": "Bearer "},
	} {
		if code := h.post(t, webhook.ReceiverRegistry, body, headers); code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, code)
		}
	}
	for _, auth := range []string{"Bearer registry-token", "registry-token"} {
		if code := h.post(t, webhook.ReceiverRegistry, body, map[string]string{"Authorization": auth}); code != http.StatusAccepted {
			t.Fatalf("Authorization %q: status %d, want 202", auth, code)
		}
	}
	want := webhook.Push{URLs: []string{"registry.example.com/org/app"}, Tag: "v1.2.0", Registry: true}
	if len(h.pushes) != 2 || !cmp.Equal(h.pushes[0], want) {
		t.Fatalf("pushes %+v; want two of %+v (the blob and the pull are no pushes)", h.pushes, want)
	}
	if code := h.post(t, webhook.ReceiverRegistry, []byte(`{"events":[{"action":"pull","target":{"repository":"org/app","tag":"v1"}}]}`), map[string]string{"Authorization": "registry-token"}); code != http.StatusOK {
		t.Errorf("a notification of pulls only: status %d, want 200 (not a push)", code)
	}
}
