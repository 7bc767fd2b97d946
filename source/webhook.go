package source

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// WebhookOptions configure the webhook receiver.
type WebhookOptions struct {
	// Secret returns the secret of a receiver (see Receivers), or nil when the
	// receiver is disabled: a disabled receiver answers 404, so an agent without
	// secrets offers nothing to the network. Required.
	Secret func(receiver string) []byte
	// OnPush is called with every authenticated push, in the request's goroutine;
	// it should only schedule work. An error answers 500. Required.
	OnPush func(ctx context.Context, p Push) error
	// MaxBodyBytes bounds a request body; a larger one answers 413.
	MaxBodyBytes int64
}

// DefaultWebhookOptions returns options with a body limit that fits GitHub's
// largest push payloads (up to 20 commits, each listing its changed files).
func DefaultWebhookOptions() WebhookOptions {
	return WebhookOptions{MaxBodyBytes: 4 << 20}
}

// WebhookPathPrefix is where receivers are served: POST /hooks/<receiver>.
const WebhookPathPrefix = "/hooks/"

// NewWebhookHandler returns the receiver of push notifications. Each request is
// authenticated before anything else is read from it: GitHub's and Gitea's HMAC-SHA256
// signatures of the body, GitLab's secret token, and for the generic receiver
// "X-Tether-Signature: sha256=<hex HMAC-SHA256 of the body>". A request without a
// valid signature answers 401 and causes no work.
//
// Answers: 202 a push was accepted, 200 a valid event that is not a push (a ping),
// 400 a push that cannot be read, 401 not authenticated, 404 no such receiver or
// disabled, 405 not POST, 413 body too large.
func NewWebhookHandler(opts WebhookOptions) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultWebhookOptions().MaxBodyBytes
	}
	return &webhookHandler{opts: opts}
}

type webhookHandler struct {
	opts WebhookOptions
}

func (h *webhookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	receiver, ok := strings.CutPrefix(r.URL.Path, WebhookPathPrefix)
	if !ok || !isReceiver(receiver) {
		http.NotFound(w, r)
		return
	}
	secret := h.opts.Secret(receiver)
	if len(secret) == 0 {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "only POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, h.opts.MaxBodyBytes+1))
	if err != nil {
		http.Error(w, "reading the body", http.StatusBadRequest)
		return
	}
	if int64(len(body)) > h.opts.MaxBodyBytes {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	if !authentic(receiver, r.Header, body, secret) {
		http.Error(w, "not authenticated", http.StatusUnauthorized)
		return
	}
	push, err := ParsePush(receiver, eventOf(receiver, r.Header), body)
	switch {
	case errors.Is(err, ErrNotAPush):
		_, _ = io.WriteString(w, "ignored: not a push\n")
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := h.opts.OnPush(r.Context(), push); err != nil {
		http.Error(w, "scheduling the push failed", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, "accepted\n")
}

func isReceiver(name string) bool {
	for _, r := range Receivers {
		if r == name {
			return true
		}
	}
	return false
}

// eventOf returns the event a host says a notification is.
func eventOf(receiver string, h http.Header) string {
	switch receiver {
	case ReceiverGitHub:
		return h.Get("X-GitHub-Event")
	case ReceiverGitLab:
		return h.Get("X-Gitlab-Event")
	case ReceiverGitea:
		return h.Get("X-Gitea-Event")
	}
	return ""
}

// Signature headers, per receiver.
const (
	githubSignatureHeader  = "X-Hub-Signature-256"
	giteaSignatureHeader   = "X-Gitea-Signature"
	gitlabTokenHeader      = "X-Gitlab-Token"
	genericSignatureHeader = "X-Tether-Signature"
)

// authentic checks a request's signature (or GitLab's token) in constant time.
func authentic(receiver string, h http.Header, body, secret []byte) bool {
	switch receiver {
	case ReceiverGitHub:
		return validHMAC(h.Get(githubSignatureHeader), "sha256=", body, secret)
	case ReceiverGitea:
		return validHMAC(h.Get(giteaSignatureHeader), "", body, secret)
	case ReceiverGeneric:
		return validHMAC(h.Get(genericSignatureHeader), "sha256=", body, secret)
	case ReceiverGitLab:
		token := h.Get(gitlabTokenHeader)
		return token != "" && subtle.ConstantTimeCompare([]byte(token), secret) == 1
	}
	return false
}

func validHMAC(header, prefix string, body, secret []byte) bool {
	sig, ok := strings.CutPrefix(header, prefix)
	if !ok || sig == "" {
		return false
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return false
	}
	return hmac.Equal(got, Sign(body, secret))
}

// Sign returns the HMAC-SHA256 of body with secret: what a sender of the generic
// receiver puts, hex-encoded after "sha256=", into X-Tether-Signature.
func Sign(body, secret []byte) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return mac.Sum(nil)
}

// SecretsDir returns the webhook secrets kept as files in dir, one per receiver
// and named for it ("github", "gitlab", "gitea", "generic"), the layout of a
// Kubernetes Secret mounted as a volume. Files are read at each request, so a
// rotated Secret takes effect without a restart; surrounding white space (a
// trailing newline) is not part of a secret. A missing or empty file, or an empty
// dir, disables the receiver.
func SecretsDir(dir string) func(receiver string) []byte {
	return func(receiver string) []byte {
		if dir == "" || !isReceiver(receiver) {
			return nil
		}
		data, err := os.ReadFile(filepath.Join(dir, receiver))
		if err != nil {
			return nil
		}
		if s := bytes.TrimSpace(data); len(s) > 0 {
			return s
		}
		return nil
	}
}
