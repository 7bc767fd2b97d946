package webhook

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
	"time"
)

// Options configure the webhook receiver.
type Options struct {
	// Secret returns the secret of a receiver (see Receivers), or nil when the
	// receiver is disabled: a disabled receiver answers 404, so an agent without
	// secrets offers nothing to the network. Required.
	Secret func(receiver string) []byte
	// OnPush is called with every authenticated push, in the request's goroutine;
	// it should only schedule work. An error answers 500. Required.
	OnPush func(ctx context.Context, p Push) error
	// MaxBodyBytes bounds one request body; a larger one answers 413, before any of
	// it is read when its Content-Length says so.
	MaxBodyBytes int64
	// MaxBytesInFlight bounds the bytes of all bodies being read at once, the
	// receiver's whole memory for bodies. A body takes from the budget as its
	// bytes arrive (its buffer: 32 KiB first, doubled as it fills), never what its
	// Content-Length announces, so that senders announcing large bodies and
	// sending nothing cannot starve others; one that does not fit answers 429.
	MaxBytesInFlight int64
	// MaxBodiesInFlight bounds how many bodies are read at once, however small;
	// one more answers 429 and is not read.
	MaxBodiesInFlight int64
	// BodyReadTimeout bounds the reading of one body, so that a slow sender gives
	// its share of the budget back; a body not read in time answers 408.
	BodyReadTimeout time.Duration
}

// DefaultOptions returns options with a body limit that fits GitHub's
// largest push payloads (up to 20 commits, each listing its changed files), and an
// in-flight budget of two such bodies: a flood of unauthenticated senders costs at
// most 8 MiB of bodies, however many they are.
func DefaultOptions() Options {
	return Options{
		MaxBodyBytes:      4 << 20,
		MaxBytesInFlight:  8 << 20,
		MaxBodiesInFlight: 32,
		BodyReadTimeout:   10 * time.Second,
	}
}

// PathPrefix is where receivers are served: POST /hooks/<receiver>.
const PathPrefix = "/hooks/"

// NewHandler returns the receiver of push notifications. Each request is
// authenticated before its body is read where the host allows it, and read under a
// budget where it does not:
//
//   - GitLab's secret token (X-Gitlab-Token) and a registry's Authorization
//     header (the secret, or "Bearer " and the secret) are headers: a wrong one
//     answers 401 before a byte of the body is read.
//   - GitHub's and Gitea's signatures, and the generic receiver's
//     "X-Tether-Signature: sha256=<hex HMAC-SHA256 of the body>", sign the body, so
//     the body must be read to check them. A request without a well-formed
//     signature header answers 401 unread; one with a signature is read only within
//     MaxBodiesInFlight (else 429, unread), MaxBytesInFlight (else 429) and BodyReadTimeout
//     (else 408), and a wrong signature then answers 401.
//
// A request refused before its body is read closes its connection, so the server
// does not read the body either. A request that is not authenticated causes no work.
//
// Answers: 202 a push was accepted, 200 a valid event that is not a push (a ping),
// 400 a push that cannot be read, 401 not authenticated, 404 no such receiver or
// disabled, 405 not POST, 408 the body came too slowly, 413 body too large, 429 too
// many bodies in flight.
func NewHandler(opts Options) http.Handler {
	def := DefaultOptions()
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = def.MaxBodyBytes
	}
	if opts.MaxBytesInFlight <= 0 {
		opts.MaxBytesInFlight = def.MaxBytesInFlight
	}
	opts.MaxBytesInFlight = max(opts.MaxBytesInFlight, opts.MaxBodyBytes)
	if opts.MaxBodiesInFlight <= 0 {
		opts.MaxBodiesInFlight = def.MaxBodiesInFlight
	}
	if opts.BodyReadTimeout <= 0 {
		opts.BodyReadTimeout = def.BodyReadTimeout
	}
	return &webhookHandler{
		opts:   opts,
		budget: &bodyBudget{maxBytes: opts.MaxBytesInFlight, maxBodies: opts.MaxBodiesInFlight},
	}
}

type webhookHandler struct {
	opts   Options
	budget *bodyBudget
}

func (h *webhookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	receiver, ok := strings.CutPrefix(r.URL.Path, PathPrefix)
	if !ok || !isReceiver(receiver) {
		refuseUnread(w, "404 page not found", http.StatusNotFound)
		return
	}
	secret := h.opts.Secret(receiver)
	if len(secret) == 0 {
		refuseUnread(w, "404 page not found", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		refuseUnread(w, "only POST", http.StatusMethodNotAllowed)
		return
	}
	sig, ok := credential(receiver, r.Header, secret)
	if !ok {
		refuseUnread(w, "not authenticated", http.StatusUnauthorized)
		return
	}
	if r.ContentLength > h.opts.MaxBodyBytes {
		refuseUnread(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	if !h.budget.enter() {
		refuseBusy(w)
		return
	}
	// The body's share of the budget is held until the request is answered: the
	// body lives as long as that.
	var charged int64
	defer func() { h.budget.leave(charged) }()
	size := h.opts.MaxBodyBytes
	if r.ContentLength >= 0 {
		size = r.ContentLength
	}
	body, ok := h.readBody(w, r, size, &charged)
	if !ok {
		return
	}
	if sig != nil && !hmac.Equal(sig, Sign(body, secret)) {
		http.Error(w, "not authenticated", http.StatusUnauthorized)
		return
	}
	h.handlePush(w, r, receiver, body)
}

// handlePush parses an authenticated body and hands the push on.
func (h *webhookHandler) handlePush(w http.ResponseWriter, r *http.Request, receiver string, body []byte) {
	pushes, err := ParsePushes(receiver, eventOf(receiver, r.Header), body)
	switch {
	case errors.Is(err, ErrNotAPush):
		_, _ = io.WriteString(w, "ignored: not a push\n")
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, push := range pushes {
		if err := h.opts.OnPush(r.Context(), push); err != nil {
			http.Error(w, "scheduling the push failed", http.StatusInternalServerError)
			return
		}
	}
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, "accepted\n")
}

// readBody reads a request's body of at most size bytes within the read deadline,
// charging the budget as it grows (charged says how much). It returns the body,
// or false when it answered the request instead.
func (h *webhookHandler) readBody(w http.ResponseWriter, r *http.Request, size int64, charged *int64) ([]byte, bool) {
	// A server that cannot set deadlines (an http.ResponseWriter of a test) keeps
	// its own; the agent's server can.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.opts.BodyReadTimeout))
	body, err := readCharged(r.Body, size, func(n int64) bool {
		if !h.budget.charge(n) {
			return false
		}
		*charged += n
		return true
	})
	var timeout interface{ Timeout() bool }
	switch {
	case errors.As(err, &timeout) && timeout.Timeout():
		refuseUnread(w, "the body came too slowly", http.StatusRequestTimeout)
	case errors.Is(err, errBodyTooLarge):
		refuseUnread(w, "body too large", http.StatusRequestEntityTooLarge)
	case errors.Is(err, errOverBudget):
		refuseBusy(w)
	case err != nil:
		refuseUnread(w, "reading the body", http.StatusBadRequest)
	default:
		return body, true
	}
	return nil, false
}

var (
	errBodyTooLarge = errors.New("body too large")
	errOverBudget   = errors.New("over the in-flight budget")
)

// firstBodyChunk is what a body is first charged and given before its first
// byte is read: a push of a few commits fits in it, and a sender who announces
// megabytes and sends nothing holds no more.
const firstBodyChunk = 32 << 10

// readCharged reads a body of at most limit bytes into one buffer that starts
// at firstBodyChunk and doubles as bytes arrive, calling charge with each
// growth of the buffer before it is made (errOverBudget when refused): what a
// body holds of the budget is its buffer, at most twice what it sent (and the
// first chunk), never what it announced.
func readCharged(r io.Reader, limit int64, charge func(n int64) bool) ([]byte, error) {
	var body []byte
	for {
		if len(body) == cap(body) {
			if int64(len(body)) > limit {
				return nil, errBodyTooLarge
			}
			grow := min(max(int64(cap(body)), firstBodyChunk), limit+1-int64(cap(body)))
			if !charge(grow) {
				return nil, errOverBudget
			}
			body = append(make([]byte, 0, int64(cap(body))+grow), body...)
		}
		n, err := r.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		switch {
		case errors.Is(err, io.EOF):
			if int64(len(body)) > limit {
				return nil, errBodyTooLarge
			}
			return body, nil
		case err != nil:
			return nil, err
		}
	}
}

// refuseBusy answers 429, unread: the in-flight budget is taken.
func refuseBusy(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	refuseUnread(w, "too many webhook bodies in flight", http.StatusTooManyRequests)
}

// refuseUnread answers a request whose body is not read, and closes the connection
// after the answer, so that the server does not read (and wait for) the body to
// keep it open.
func refuseUnread(w http.ResponseWriter, msg string, code int) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, code)
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

// credential checks what of a request's authentication can be checked before its
// body is read. GitLab's token is checked whole (in constant time): ok, with no
// signature left to check. For the receivers that sign the body, the signature
// header must be present and well formed; it is returned, to be compared with the
// body's HMAC once read.
func credential(receiver string, h http.Header, secret []byte) (sig []byte, ok bool) {
	switch receiver {
	case ReceiverGitHub:
		return signature(h.Get(githubSignatureHeader), "sha256=")
	case ReceiverGitea:
		return signature(h.Get(giteaSignatureHeader), "")
	case ReceiverGeneric:
		return signature(h.Get(genericSignatureHeader), "sha256=")
	case ReceiverGitLab:
		token := h.Get(gitlabTokenHeader)
		return nil, token != "" && subtle.ConstantTimeCompare([]byte(token), secret) == 1
	case ReceiverRegistry:
		// The header a registry's endpoint is configured to send
		// (Distribution's notifications headers): the secret, or "Bearer "
		// and the secret, checked whole before the body is read.
		token := strings.TrimPrefix(h.Get("Authorization"), "Bearer ")
		return nil, token != "" && subtle.ConstantTimeCompare([]byte(token), secret) == 1
	}
	return nil, false
}

// signature decodes a hex HMAC-SHA256 after prefix; ok is false unless it is one.
func signature(header, prefix string) ([]byte, bool) {
	hexSig, ok := strings.CutPrefix(header, prefix)
	if !ok || len(hexSig) != 2*sha256.Size {
		return nil, false
	}
	sig, err := hex.DecodeString(hexSig)
	if err != nil {
		return nil, false
	}
	return sig, true
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
