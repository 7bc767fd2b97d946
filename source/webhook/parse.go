package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
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
	// Registry is true for a registry's notification (ReceiverRegistry),
	// which a registry may send before it serves the tag it announces.
	Registry bool
}

// Receivers: the git hosts whose push notifications Tether understands, and a
// generic form for anything else (a CI job, a script).
const (
	ReceiverGitHub = "github"
	ReceiverGitLab = "gitlab"
	ReceiverGitea  = "gitea"
	// ReceiverRegistry takes an OCI registry's notifications of pushed tags,
	// in CNCF Distribution's format (its notifications endpoints; the
	// registries built on it send the same).
	ReceiverRegistry = "registry"
	ReceiverGeneric  = "generic"
)

// Receivers lists every receiver, in the order the documentation gives them.
var Receivers = []string{ReceiverGitHub, ReceiverGitLab, ReceiverGitea, ReceiverRegistry, ReceiverGeneric}

// maxRegistryEvents bounds the events of one registry notification read;
// Distribution sends one per request by default.
const maxRegistryEvents = 100

// ParsePushes reads a notification's body as ParsePush does, into the pushes
// it announces: one for a git host's or the generic receiver's, one per tag
// pushed for a registry's (an envelope may hold several events; events that
// push no tag, a blob or a manifest by digest, and pulls are not pushes).
func ParsePushes(receiver, event string, body []byte) ([]Push, error) {
	if receiver != ReceiverRegistry {
		p, err := ParsePush(receiver, event, body)
		if err != nil {
			return nil, err
		}
		return []Push{p}, nil
	}
	var envelope struct {
		Events []struct {
			Action string `json:"action"`
			Target struct {
				Repository string `json:"repository"`
				Tag        string `json:"tag"`
				URL        string `json:"url"`
			} `json:"target"`
			Request struct {
				Host string `json:"host"`
			} `json:"request"`
		} `json:"events"`
	}
	if err := json.Unmarshal(body, &envelope); err != nil {
		return nil, fmt.Errorf("reading the registry's events: %w", err)
	}
	var pushes []Push
	seen := map[string]bool{}
	for i, e := range envelope.Events {
		if i == maxRegistryEvents {
			break
		}
		if e.Action != "push" || e.Target.Tag == "" || e.Target.Repository == "" {
			continue
		}
		// The repository as the pusher named its registry, and as the
		// registry names itself in the manifest's URL.
		var urls []string
		if e.Request.Host != "" {
			urls = append(urls, "oci://"+e.Request.Host+"/"+e.Target.Repository)
		}
		if u, err := url.Parse(e.Target.URL); err == nil && u.Host != "" {
			urls = append(urls, "oci://"+u.Host+"/"+e.Target.Repository)
		}
		p, err := newPush("refs/tags/"+e.Target.Tag, urls...)
		if err != nil || len(p.URLs) == 0 {
			continue
		}
		p.Registry = true
		key := strings.Join(p.URLs, " ") + "\x00" + p.Tag
		if !seen[key] {
			seen[key] = true
			pushes = append(pushes, p)
		}
	}
	if len(pushes) == 0 {
		return nil, fmt.Errorf("%w: no tag pushed among the registry's events", ErrNotAPush)
	}
	return pushes, nil
}

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
	case ReceiverRegistry:
		pushes, err := ParsePushes(receiver, event, body)
		if err != nil {
			return Push{}, err
		}
		return pushes[0], nil
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
