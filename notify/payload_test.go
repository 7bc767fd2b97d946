package notify

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/harness"
)

// received is one request a loopback receiver got.
type received struct {
	method, path string
	header       http.Header
	body         []byte
}

// receiver is a loopback stand-in for a vendor's endpoint: it records each
// request and answers 200 (or what answer says).
func receiver(t *testing.T, answer func(n int) int) (*httptest.Server, <-chan received) {
	t.Helper()
	got := make(chan received, 100)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		code := http.StatusOK
		if answer != nil {
			code = answer(int(n.Add(1)))
		}
		w.WriteHeader(code)
		if code == http.StatusOK {
			got <- received{method: r.Method, path: r.URL.EscapedPath(), header: r.Header.Clone(), body: body}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func fastSender(t *testing.T) *Sender {
	t.Helper()
	o := DefaultSenderOptions()
	o.MinBackoff, o.MaxBackoff = time.Millisecond, 5*time.Millisecond
	s, err := NewSender(o, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func one(t *testing.T, got <-chan received) received {
	t.Helper()
	select {
	case r := <-got:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("the receiver got nothing")
	}
	return received{}
}

func decode(t *testing.T, body []byte, into any) {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(string(body)))
	d.DisallowUnknownFields()
	if err := d.Decode(into); err != nil {
		t.Fatalf("the body is not the vendor's shape: %v\n%s", err, body)
	}
}

func failedEvent() Event {
	return Event{Namespace: "team-a", Sync: "web", Kind: EventFailed, Severity: v1alpha1.SeverityError, Reason: v1alpha1.ReasonValidationFailed,
		Message: "Deployment/team-a/web: spec.replicas: invalid", Revision: "main@sha1:" + shaB, Subject: "Scale web", Time: time.Unix(1700000000, 0)}
}

// send returns a function that sends a built request, or fails t with why it was not built.
func send(t *testing.T) func(Request, error) {
	t.Helper()
	return func(req Request, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fastSender(t).Send(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
}

// The chat receivers' payloads, each checked against the shape its vendor
// documents (only the documented fields, DisallowUnknownFields).
func TestChatPayloadsHaveTheVendorsShape(t *testing.T) {
	msg := Message{Events: []Event{failedEvent()}}

	t.Run("Slack incoming webhook: text and a coloured attachment", func(t *testing.T) {
		srv, got := receiver(t, nil)
		send(t)(ChatRequest(Receiver{Type: v1alpha1.NotifierSlack, Address: srv.URL + "/services/T/B/X", Channel: "#deploys"}, msg))
		r := one(t, got)
		var body struct {
			Text        string `json:"text"`
			Channel     string `json:"channel"`
			Username    string `json:"username"`
			Attachments []struct {
				Color    string   `json:"color"`
				Text     string   `json:"text"`
				MrkdwnIn []string `json:"mrkdwn_in"`
			} `json:"attachments"`
		}
		decode(t, r.body, &body)
		if r.path != "/services/T/B/X" || body.Text != "team-a/web: Failed main@9a8b7c6" || body.Channel != "#deploys" ||
			len(body.Attachments) != 1 || body.Attachments[0].Color != "danger" || !strings.Contains(body.Attachments[0].Text, "spec.replicas: invalid") {
			t.Errorf("got %s %s", r.path, r.body)
		}
	})
	t.Run("Slack chat.postMessage: the bot token as a Bearer and the channel", func(t *testing.T) {
		req, err := ChatRequest(Receiver{Type: v1alpha1.NotifierSlack, Address: slackPostMessage, Channel: "C123", Token: "xoxb-1"}, msg)
		if err != nil || req.URL != slackPostMessage || req.Header.Get("Authorization") != "Bearer xoxb-1" || !strings.Contains(string(req.Body), `"channel":"C123"`) {
			t.Errorf("request = %+v (%v)", req, err)
		}
	})
	t.Run("Slack: markup from git is escaped", func(t *testing.T) {
		e := failedEvent()
		e.Subject = "<!channel> & <https://evil|click>"
		req, err := ChatRequest(Receiver{Type: v1alpha1.NotifierSlack, Address: "http://127.0.0.1/"}, Message{Events: []Event{e}})
		harness.Must(t, err)
		var body struct {
			Attachments []struct{ Text string } `json:"attachments"`
		}
		harness.Must(t, json.Unmarshal(req.Body, &body))
		if text := body.Attachments[0].Text; strings.Contains(text, "<!channel>") || !strings.Contains(text, "(&lt;!channel&gt; &amp; &lt;https://evil|click&gt;)") {
			t.Errorf("text = %q", text)
		}
	})
	t.Run("Microsoft Teams workflow webhook: a message with an Adaptive Card", func(t *testing.T) {
		srv, got := receiver(t, nil)
		send(t)(ChatRequest(Receiver{Type: v1alpha1.NotifierMSTeams, Address: srv.URL + "/workflows/1"}, msg))
		var body struct {
			Type        string `json:"type"`
			Attachments []struct {
				ContentType string `json:"contentType"`
				Content     struct {
					Schema  string `json:"$schema"`
					Type    string `json:"type"`
					Version string `json:"version"`
					Body    []struct {
						Type   string `json:"type"`
						Text   string `json:"text"`
						Weight string `json:"weight"`
						Size   string `json:"size"`
						Wrap   bool   `json:"wrap"`
					} `json:"body"`
				} `json:"content"`
			} `json:"attachments"`
		}
		decode(t, one(t, got).body, &body)
		if body.Type != "message" || len(body.Attachments) != 1 || body.Attachments[0].ContentType != "application/vnd.microsoft.card.adaptive" {
			t.Fatalf("got %+v", body)
		}
		c := body.Attachments[0].Content
		if c.Type != "AdaptiveCard" || c.Version == "" || len(c.Body) < 2 || c.Body[0].Type != "TextBlock" || c.Body[0].Text != "team-a/web: Failed main@9a8b7c6" {
			t.Errorf("card = %+v", c)
		}
	})
	t.Run("Discord: an embed with a title, description and colour", func(t *testing.T) {
		srv, got := receiver(t, nil)
		send(t)(ChatRequest(Receiver{Type: v1alpha1.NotifierDiscord, Address: srv.URL + "/api/webhooks/1/x", Username: "tether"}, msg))
		var body struct {
			Username        string `json:"username"`
			AllowedMentions struct {
				Parse []string `json:"parse"`
			} `json:"allowed_mentions"`
			Embeds []struct {
				Title       string `json:"title"`
				Description string `json:"description"`
				Color       int    `json:"color"`
			} `json:"embeds"`
		}
		decode(t, one(t, got).body, &body)
		if body.Username != "tether" || len(body.Embeds) != 1 || body.Embeds[0].Color != 0xd40e0d || !strings.Contains(body.Embeds[0].Description, "Scale web") {
			t.Errorf("got %+v", body)
		}
	})
	t.Run("Google Chat: a text message", func(t *testing.T) {
		srv, got := receiver(t, nil)
		send(t)(ChatRequest(Receiver{Type: v1alpha1.NotifierGoogleChat, Address: srv.URL + "/v1/spaces/A/messages?key=k&token=t"}, msg))
		var body struct {
			Text string `json:"text"`
		}
		decode(t, one(t, got).body, &body)
		if !strings.HasPrefix(body.Text, "*team-a/web: Failed") {
			t.Errorf("got %q", body.Text)
		}
	})
	t.Run("generic-hmac: the receiver verifies X-Signature", func(t *testing.T) {
		srv, got := receiver(t, nil)
		send(t)(ChatRequest(Receiver{Type: v1alpha1.NotifierGenericHMAC, Address: srv.URL + "/hook", Token: "s3cret"}, msg))
		r := one(t, got)
		if sig := r.header.Get("X-Signature"); !VerifySignature([]byte("s3cret"), r.body, sig) || VerifySignature([]byte("other"), r.body, sig) {
			t.Errorf("signature %q does not verify", sig)
		}
		var body GenericMessage
		decode(t, r.body, &body)
		if len(body.Events) != 1 || body.Events[0].Reason != v1alpha1.ReasonValidationFailed || body.Events[0].Revision != "main@sha1:"+shaB {
			t.Errorf("got %+v", body)
		}
	})
	t.Run("generic-hmac without a key is refused, not sent unsigned", func(t *testing.T) {
		if _, err := ChatRequest(Receiver{Type: v1alpha1.NotifierGenericHMAC, Address: "http://127.0.0.1/"}, msg); err == nil {
			t.Error("no error")
		}
	})
}

// The commit-status APIs, each at the path and with the auth its host documents.
func TestCommitStatusesHaveTheHostsShape(t *testing.T) {
	type status struct {
		State       string `json:"state"`
		Context     string `json:"context"`
		Name        string `json:"name"`
		Key         string `json:"key"`
		Description string `json:"description"`
		TargetURL   string `json:"target_url"`
		URL         string `json:"url"`
	}
	for _, tc := range []struct {
		typ              v1alpha1.NotifierType
		repoPath         string
		state            CommitState
		wantPath         string
		wantState        string
		authHeader, auth string
	}{
		{v1alpha1.NotifierGitHub, "/org/app", CommitSuccess, "/api/v3/repos/org/app/statuses/" + shaA, "success", "Authorization", "Bearer tok"},
		{v1alpha1.NotifierGitLab, "/group/sub/app", CommitFailure, "/api/v4/projects/group%2Fsub%2Fapp/statuses/" + shaA, "failed", "PRIVATE-TOKEN", "tok"},
		{v1alpha1.NotifierGitea, "/org/app.git", CommitPending, "/api/v1/repos/org/app/statuses/" + shaA, "pending", "Authorization", "token tok"},
		{v1alpha1.NotifierBitbucketServer, "/projects/PRJ/repos/app", CommitSuccess, "/rest/build-status/1.0/commits/" + shaA, "SUCCESSFUL", "Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("bot:pw"))},
	} {
		t.Run(string(tc.typ), func(t *testing.T) {
			srv, got := receiver(t, nil)
			r := Receiver{Type: tc.typ, Address: srv.URL + tc.repoPath, Token: "tok"}
			if tc.typ == v1alpha1.NotifierBitbucketServer {
				r.BasicUser, r.Password = "bot", "pw"
			}
			send(t)(CommitStatusRequest(r, "team-a", "web", Commit{SHA: shaA, State: tc.state, Description: "Healthy"}))
			req := one(t, got)
			var body status
			decode(t, req.body, &body)
			if req.method != http.MethodPost || req.path != tc.wantPath || body.State != tc.wantState || req.header.Get(tc.authHeader) != tc.auth {
				t.Errorf("got %s %s %s=%q %s", req.method, req.path, tc.authHeader, req.header.Get(tc.authHeader), req.body)
			}
			if ctx := body.Context + body.Name + body.Key; !strings.Contains(ctx, "tether/team-a/web") {
				t.Errorf("the context does not name the Sync: %s", req.body)
			}
		})
	}
}

func TestRepositoryOfDerivesTheAPI(t *testing.T) {
	for _, tc := range []struct {
		typ              v1alpha1.NotifierType
		address          string
		api, owner, name string
	}{
		{v1alpha1.NotifierGitHub, "https://github.com/org/app", "https://api.github.com", "org", "app"},
		{v1alpha1.NotifierGitHub, "https://ghe.corp/org/app.git", "https://ghe.corp/api/v3", "org", "app"},
		{v1alpha1.NotifierGitLab, "https://gitlab.com/group/sub/app", "https://gitlab.com/api/v4", "group/sub", "app"},
		{v1alpha1.NotifierGitea, "http://gitea.local:3000/org/app", "http://gitea.local:3000/api/v1", "org", "app"},
		{v1alpha1.NotifierBitbucketServer, "https://bb.corp/projects/PRJ/repos/app", "https://bb.corp/rest/build-status/1.0", "PRJ", "app"},
	} {
		repo, err := RepositoryOf(tc.typ, tc.address)
		if err != nil || repo.API != tc.api || repo.Owner != tc.owner || repo.Name != tc.name {
			t.Errorf("%s %s: %+v, %v", tc.typ, tc.address, repo, err)
		}
	}
	for _, bad := range []string{"https://github.com/", "https://github.com/org", "ftp://github.com/org/app", "github.com/org/app"} {
		if _, err := RepositoryOf(v1alpha1.NotifierGitHub, bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
