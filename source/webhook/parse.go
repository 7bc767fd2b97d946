package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"tether.dev/tether/source/result"
)

// Push is what an authenticated push notification says: which repository moved,
// and which branch or tag.
type Push struct {
	// URLs name the repository in every form the host gave (clone, SSH, web),
	// each reduced by NormalizeURL and without repeats.
	URLs []string
	// Branch is the branch pushed to; empty for a tag push.
	Branch string
	// Tag is the tag pushed (created, moved or deleted); empty for a branch push.
	Tag string
}

// Receivers: the git hosts whose push notifications Tether understands, and a
// generic form for anything else (a CI job, a script).
const (
	ReceiverGitHub  = "github"
	ReceiverGitLab  = "gitlab"
	ReceiverGitea   = "gitea"
	ReceiverGeneric = "generic"
)

// Receivers lists every receiver, in the order the documentation gives them.
var Receivers = []string{ReceiverGitHub, ReceiverGitLab, ReceiverGitea, ReceiverGeneric}

// ErrNotAPush is returned for a notification that is valid but not a push (GitHub's
// "ping" when a hook is created, an issue event): it asks for no work.
var ErrNotAPush = errors.New("not a push event")

// ParsePush reads the push notification body of receiver, whose event header
// (X-GitHub-Event, X-Gitlab-Event, X-Gitea-Event; ignored for the generic
// receiver) says event. The body must already be authenticated: parsing is pure
// and does not check signatures.
func ParsePush(receiver, event string, body []byte) (Push, error) {
	switch receiver {
	case ReceiverGitHub, ReceiverGitea:
		if event != "push" {
			return Push{}, fmt.Errorf("%w: %q", ErrNotAPush, event)
		}
		var p struct {
			Ref        string `json:"ref"`
			Repository struct {
				CloneURL string `json:"clone_url"`
				SSHURL   string `json:"ssh_url"`
				HTMLURL  string `json:"html_url"`
				GitURL   string `json:"git_url"`
			} `json:"repository"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return Push{}, fmt.Errorf("reading the push: %w", err)
		}
		r := p.Repository
		return newPush(p.Ref, r.CloneURL, r.SSHURL, r.HTMLURL, r.GitURL)
	case ReceiverGitLab:
		if event != "Push Hook" && event != "Tag Push Hook" {
			return Push{}, fmt.Errorf("%w: %q", ErrNotAPush, event)
		}
		var p struct {
			Ref     string `json:"ref"`
			Project struct {
				HTTPURL string `json:"git_http_url"`
				SSHURL  string `json:"git_ssh_url"`
				WebURL  string `json:"web_url"`
			} `json:"project"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return Push{}, fmt.Errorf("reading the push: %w", err)
		}
		return newPush(p.Ref, p.Project.HTTPURL, p.Project.SSHURL, p.Project.WebURL)
	case ReceiverGeneric:
		var p struct {
			URL    string `json:"url"`
			Branch string `json:"branch"`
			Tag    string `json:"tag"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return Push{}, fmt.Errorf("reading the push: %w", err)
		}
		if (p.Branch == "") == (p.Tag == "") {
			return Push{}, errors.New("reading the push: give exactly one of branch and tag")
		}
		ref := "refs/heads/" + p.Branch
		if p.Tag != "" {
			ref = "refs/tags/" + p.Tag
		}
		return newPush(ref, p.URL)
	}
	return Push{}, fmt.Errorf("unknown receiver %q", receiver)
}

// newPush builds a Push from a full ref name and the repository's URLs.
func newPush(ref string, urls ...string) (Push, error) {
	var p Push
	switch {
	case strings.HasPrefix(ref, "refs/heads/") && len(ref) > len("refs/heads/"):
		p.Branch = strings.TrimPrefix(ref, "refs/heads/")
	case strings.HasPrefix(ref, "refs/tags/") && len(ref) > len("refs/tags/"):
		p.Tag = strings.TrimPrefix(ref, "refs/tags/")
	default:
		return Push{}, fmt.Errorf("reading the push: ref %q is neither a branch nor a tag", ref)
	}
	seen := map[string]bool{}
	for _, u := range urls {
		if n := result.NormalizeURL(u); n != "" && !seen[n] {
			seen[n] = true
			p.URLs = append(p.URLs, n)
		}
	}
	if len(p.URLs) == 0 {
		return Push{}, errors.New("reading the push: it names no repository URL")
	}
	return p, nil
}
