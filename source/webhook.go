package source

import (
	"net/http"

	"tether.dev/tether/source/result"
	"tether.dev/tether/source/webhook"
)

// The push receiver (package webhook) and the rule that compares repository
// URLs (result.NormalizeURL), under the names the callers of source know.
type (
	// WebhookOptions configure the push receiver.
	WebhookOptions = webhook.Options
	// Push is what a push notification says changed.
	Push = webhook.Push
)

// WebhookPathPrefix is the path under which each receiver listens.
const WebhookPathPrefix = webhook.PathPrefix

// The receivers, one per git host's notification format.
const (
	ReceiverGitHub   = webhook.ReceiverGitHub
	ReceiverGitLab   = webhook.ReceiverGitLab
	ReceiverGitea    = webhook.ReceiverGitea
	ReceiverRegistry = webhook.ReceiverRegistry
	ReceiverGeneric  = webhook.ReceiverGeneric
)

// Receivers lists every receiver, in the order the documentation gives them.
var Receivers = webhook.Receivers

// ErrNotAPush is returned for a notification that is valid but not a push.
var ErrNotAPush = webhook.ErrNotAPush

// DefaultWebhookOptions returns the receiver's defaults (webhook.DefaultOptions).
func DefaultWebhookOptions() WebhookOptions { return webhook.DefaultOptions() }

// NewWebhookHandler returns the push receiver (webhook.NewHandler).
func NewWebhookHandler(opts WebhookOptions) http.Handler { return webhook.NewHandler(opts) }

// ParsePush reads a push notification's body (webhook.ParsePush).
func ParsePush(receiver, event string, body []byte) (Push, error) {
	return webhook.ParsePush(receiver, event, body)
}

// Sign returns the HMAC-SHA256 of body with secret (webhook.Sign).
func Sign(body, secret []byte) []byte { return webhook.Sign(body, secret) }

// SecretsDir reads each receiver's secret from a file of dir named after it
// (webhook.SecretsDir).
func SecretsDir(dir string) func(receiver string) []byte { return webhook.SecretsDir(dir) }

// NormalizeURL returns the form in which two URLs of one repository compare
// equal (result.NormalizeURL).
func NormalizeURL(raw string) string { return result.NormalizeURL(raw) }
