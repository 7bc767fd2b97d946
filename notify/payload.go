package notify

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"tether.dev/tether/api/v1alpha1"
)

// Receiver is a Notifier resolved for sending: its spec, with the address and
// credentials read from its Secret. It is never logged.
type Receiver struct {
	// Type of the receiver.
	Type v1alpha1.NotifierType
	// Address of the receiver (a URL).
	Address string
	// Channel and Username as the Notifier's spec gives them.
	Channel, Username string
	// Token, and BasicUser and Password, from the Notifier's Secret.
	Token, BasicUser, Password string
	// Proxy is the HTTP proxy to send through, from the Notifier's Secret
	// (Flux's key "proxy"); empty: the agent's environment decides.
	Proxy string
}

// Request is what a payload builder makes: one HTTP request to a receiver.
type Request struct {
	Method string
	URL    string
	Header http.Header
	Body   []byte
}

// Message is what a chat or webhook receiver is sent at once: one event, or the
// events of a burst coalesced, with how many more were left out to keep it short.
type Message struct {
	Events []Event
	// Omitted counts the events of the burst not listed.
	Omitted int
}

// Severity is the worst severity of the message's events.
func (m Message) Severity() v1alpha1.Severity {
	for _, e := range m.Events {
		if e.Severity == v1alpha1.SeverityError {
			return v1alpha1.SeverityError
		}
	}
	return v1alpha1.SeverityInfo
}

// Title is the message's headline.
func (m Message) Title() string {
	if len(m.Events) == 1 && m.Omitted == 0 {
		return m.Events[0].Title()
	}
	return fmt.Sprintf("%d Sync events", len(m.Events)+m.Omitted)
}

// Lines are the message's events, one line each, and a last line for the omitted.
func (m Message) Lines() []string {
	var out []string
	for _, e := range m.Events {
		l := e.Title()
		if e.Subject != "" {
			l += " (" + e.Subject + ")"
		}
		if e.Message != "" {
			l += ": " + e.Message
		}
		out = append(out, l)
	}
	if m.Omitted > 0 {
		out = append(out, fmt.Sprintf("… and %d more", m.Omitted))
	}
	return out
}

// ChatRequest builds the request that sends msg to a chat or webhook receiver, in
// the shape its vendor documents.
func ChatRequest(r Receiver, msg Message) (Request, error) {
	var body any
	switch r.Type {
	case v1alpha1.NotifierSlack:
		return slackRequest(r, msg)
	case v1alpha1.NotifierMSTeams:
		body = teamsBody(msg)
	case v1alpha1.NotifierDiscord:
		body = discordBody(r, msg)
	case v1alpha1.NotifierGoogleChat:
		body = map[string]any{"text": "*" + msg.Title() + "*\n" + strings.Join(msg.Lines(), "\n")}
	case v1alpha1.NotifierGeneric, v1alpha1.NotifierGenericHMAC:
		return genericRequest(r, msg)
	default:
		return Request{}, fmt.Errorf("a %s notifier sends no messages", r.Type)
	}
	return jsonRequest(http.MethodPost, r.Address, body)
}

func jsonRequest(method, url string, body any) (Request, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return Request{}, err
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return Request{Method: method, URL: url, Header: h, Body: data}, nil
}

// slackPostMessage is the address of Slack's Web API method; any other address is
// an incoming webhook.
const slackPostMessage = "https://slack.com/api/chat.postMessage"

// slackRequest: an incoming webhook takes {text, attachments}; chat.postMessage
// takes the same with a channel and the bot token as a Bearer.
func slackRequest(r Receiver, msg Message) (Request, error) {
	color := "good"
	if msg.Severity() == v1alpha1.SeverityError {
		color = "danger"
	}
	body := map[string]any{
		"text": slackEscape(msg.Title()),
		"attachments": []map[string]any{{
			"color":     color,
			"text":      slackEscape(strings.Join(msg.Lines(), "\n")),
			"mrkdwn_in": []string{"text"},
		}},
	}
	if r.Channel != "" {
		body["channel"] = r.Channel
	}
	if r.Username != "" {
		body["username"] = r.Username
	}
	req, err := jsonRequest(http.MethodPost, r.Address, body)
	if err == nil && r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	return req, err
}

// slackEscape escapes what Slack reads as markup (&, <, >): messages carry text
// from git (file names, commit subjects), and "<!channel>" in a commit subject
// must not page a channel.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// teamsBody is a message with one Adaptive Card, as Teams workflow webhooks take.
func teamsBody(msg Message) map[string]any {
	blocks := []map[string]any{{"type": "TextBlock", "text": msg.Title(), "weight": "bolder", "size": "medium", "wrap": true}}
	for _, l := range msg.Lines() {
		blocks = append(blocks, map[string]any{"type": "TextBlock", "text": l, "wrap": true})
	}
	return map[string]any{
		"type": "message",
		"attachments": []map[string]any{{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"content": map[string]any{
				"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
				"type":    "AdaptiveCard",
				"version": "1.4",
				"body":    blocks,
			},
		}},
	}
}

// discordMax bounds a Discord embed's description (the API allows 4096).
const discordMax = 4000

func discordBody(r Receiver, msg Message) map[string]any {
	color := 0x2eb886
	if msg.Severity() == v1alpha1.SeverityError {
		color = 0xd40e0d
	}
	desc := strings.Join(msg.Lines(), "\n")
	if len(desc) > discordMax {
		desc = strings.ToValidUTF8(desc[:discordMax], "") + "…"
	}
	// allowed_mentions empty: "@everyone" in a commit subject mentions no one.
	body := map[string]any{
		"embeds":           []map[string]any{{"title": msg.Title(), "description": desc, "color": color}},
		"allowed_mentions": map[string]any{"parse": []string{}},
	}
	if r.Username != "" {
		body["username"] = r.Username
	}
	return body
}

// GenericEvent is the JSON a generic webhook receives for each event.
type GenericEvent struct {
	Namespace string `json:"namespace"`
	Sync      string `json:"sync"`
	Kind      string `json:"kind"`
	Severity  string `json:"severity"`
	Reason    string `json:"reason,omitempty"`
	Message   string `json:"message,omitempty"`
	Revision  string `json:"revision,omitempty"`
	Subject   string `json:"subject,omitempty"`
	Timestamp string `json:"timestamp"`
}

// GenericMessage is the body a generic webhook receives.
type GenericMessage struct {
	Events  []GenericEvent `json:"events"`
	Omitted int            `json:"omitted,omitempty"`
}

// SignatureHeader carries a generic-hmac body's signature: "sha256=<hex>" of the
// HMAC-SHA256 of the body under the Notifier's token, as Flux signs.
const SignatureHeader = "X-Signature"

func genericRequest(r Receiver, msg Message) (Request, error) {
	gm := GenericMessage{Omitted: msg.Omitted}
	for _, e := range msg.Events {
		gm.Events = append(gm.Events, GenericEvent{
			Namespace: e.Namespace, Sync: e.Sync, Kind: e.Kind, Severity: string(e.Severity),
			Reason: e.Reason, Message: e.Message, Revision: e.Revision, Subject: e.Subject,
			Timestamp: e.Time.UTC().Format("2006-01-02T15:04:05Z"),
		})
	}
	req, err := jsonRequest(http.MethodPost, r.Address, gm)
	if err != nil {
		return req, err
	}
	if r.Type == v1alpha1.NotifierGenericHMAC {
		if r.Token == "" {
			return Request{}, fmt.Errorf("a generic-hmac notifier needs the key token in its Secret")
		}
		req.Header.Set(SignatureHeader, Sign([]byte(r.Token), req.Body))
	} else if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	return req, nil
}

// Sign returns the X-Signature value of body under key: "sha256=<hex>".
func Sign(key, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// VerifySignature reports whether sig is body's signature under key; receivers
// (and the tests) check a generic-hmac message with it.
func VerifySignature(key, body []byte, sig string) bool {
	return hmac.Equal([]byte(sig), []byte(Sign(key, body)))
}

// bodyReader gives a request's body to net/http, afresh for each attempt.
func (r Request) bodyReader() *bytes.Reader { return bytes.NewReader(r.Body) }
