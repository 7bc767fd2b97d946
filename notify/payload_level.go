package notify

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"tether.dev/tether/api/v1alpha1"
)

// Repository is a git host's repository, from a commit-status Notifier's address
// (https://HOST/OWNER/REPO): where its API is, and the path that names it.
type Repository struct {
	// API is the base URL of the host's API, as the peers derive it: github.com →
	// https://api.github.com, another GitHub host → https://HOST/api/v3 (GitHub
	// Enterprise); GitLab /api/v4, Gitea /api/v1, Bitbucket Server
	// /rest/build-status/1.0.
	API string
	// Owner and Name of the repository (Owner may hold GitLab's subgroups;
	// Bitbucket Server's project key).
	Owner, Name string
	// Web is the repository's web URL, for links.
	Web string
}

// RepositoryOf parses a commit-status Notifier's address.
func RepositoryOf(t v1alpha1.NotifierType, address string) (Repository, error) {
	u, err := url.Parse(address)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return Repository{}, fmt.Errorf("the address is not an http(s) URL of a repository")
	}
	path := strings.Trim(strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git"), "/")
	i := strings.LastIndex(path, "/")
	if i <= 0 || i == len(path)-1 {
		return Repository{}, fmt.Errorf("the address names no repository (https://HOST/OWNER/REPO)")
	}
	host := u.Scheme + "://" + u.Host
	repo := Repository{Owner: path[:i], Name: path[i+1:], Web: host + "/" + path}
	switch t {
	case v1alpha1.NotifierGitHub:
		repo.API = host + "/api/v3"
		if u.Host == "github.com" {
			repo.API = "https://api.github.com"
		}
	case v1alpha1.NotifierGitLab:
		repo.API = host + "/api/v4"
	case v1alpha1.NotifierGitea:
		repo.API = host + "/api/v1"
	case v1alpha1.NotifierBitbucketServer:
		repo.API = host + "/rest/build-status/1.0"
		// Bitbucket Server's web URLs read /projects/KEY/repos/NAME (or /scm/KEY/NAME.git).
		parts := strings.Split(path, "/")
		if len(parts) >= 4 && parts[len(parts)-2] == "repos" {
			repo.Owner, repo.Name = parts[len(parts)-3], parts[len(parts)-1]
		}
	default:
		return Repository{}, fmt.Errorf("a %s notifier sets no commit statuses", t)
	}
	return repo, nil
}

// StatusContext names a Sync in a commit status: "tether/<namespace>/<name>".
func StatusContext(namespace, name string) string {
	return "tether/" + namespace + "/" + name
}

// CommitStatusRequest builds the request that sets commit c for the Sync
// namespace/name, in the API of the receiver's git host.
func CommitStatusRequest(r Receiver, namespace, name string, c Commit) (Request, error) {
	repo, err := RepositoryOf(r.Type, r.Address)
	if err != nil {
		return Request{}, err
	}
	if !isHex(c.SHA) {
		return Request{}, fmt.Errorf("%q is not a commit hash", c.SHA)
	}
	ctx := StatusContext(namespace, name)
	desc := firstLine(c.Description)
	var req Request
	switch r.Type {
	case v1alpha1.NotifierGitHub, v1alpha1.NotifierGitea:
		// GitHub and Gitea take the same body; Gitea says "token", GitHub "Bearer".
		req, err = jsonRequest(http.MethodPost,
			repo.API+"/repos/"+url.PathEscape(repo.Owner)+"/"+url.PathEscape(repo.Name)+"/statuses/"+c.SHA,
			map[string]string{"state": string(c.State), "context": ctx, "description": desc, "target_url": repo.Web + "/commit/" + c.SHA})
		if err == nil && r.Token != "" {
			scheme := "Bearer "
			if r.Type == v1alpha1.NotifierGitea {
				scheme = "token "
			}
			req.Header.Set("Authorization", scheme+r.Token)
		}
		if r.Type == v1alpha1.NotifierGitHub {
			req.Header.Set("Accept", "application/vnd.github+json")
		}
	case v1alpha1.NotifierGitLab:
		req, err = jsonRequest(http.MethodPost,
			repo.API+"/projects/"+url.PathEscape(repo.Owner+"/"+repo.Name)+"/statuses/"+c.SHA,
			map[string]string{"state": gitlabState(c.State), "name": ctx, "description": desc, "target_url": repo.Web + "/-/commit/" + c.SHA})
		if err == nil && r.Token != "" {
			req.Header.Set("PRIVATE-TOKEN", r.Token)
		}
	case v1alpha1.NotifierBitbucketServer:
		req, err = jsonRequest(http.MethodPost, repo.API+"/commits/"+c.SHA,
			map[string]string{"state": bitbucketState(c.State), "key": ctx, "name": ctx, "description": desc, "url": repo.Web})
		if err == nil {
			setBasicOrBearer(req.Header, r)
		}
	}
	return req, err
}

func setBasicOrBearer(h http.Header, r Receiver) {
	switch {
	case r.BasicUser != "":
		h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(r.BasicUser+":"+r.Password)))
	case r.Token != "":
		h.Set("Authorization", "Bearer "+r.Token)
	}
}

func gitlabState(s CommitState) string {
	if s == CommitFailure {
		return "failed"
	}
	return string(s)
}

func bitbucketState(s CommitState) string {
	switch s {
	case CommitSuccess:
		return "SUCCESSFUL"
	case CommitFailure:
		return "FAILED"
	}
	return "INPROGRESS"
}

func isHex(s string) bool {
	if len(s) < 7 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}

// AlertName is the alertname of the alert a Sync fires in Alertmanager.
const AlertName = "TetherSyncFailed"

// alertmanagerAlert is one alert of Alertmanager's API v2 (POST /api/v2/alerts).
type alertmanagerAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     string            `json:"startsAt,omitempty"`
	EndsAt       string            `json:"endsAt,omitempty"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// AlertRequest builds the request that fires (or resolves, with endsAt now) the
// alert of the Sync namespace/name. Alertmanager keeps an alert it is sent again
// as one, so the level may be sent again safely.
func AlertRequest(r Receiver, namespace, name string, a Alert, now time.Time) (Request, error) {
	al := alertmanagerAlert{
		Labels: map[string]string{"alertname": AlertName, "namespace": namespace, "sync": name, "severity": "error"},
	}
	if a.Firing {
		// The reason is an annotation, not a label: labels name the alert, and the
		// alert that resolves must be the one that fired, whatever its reason.
		al.Annotations = map[string]string{"summary": namespace + "/" + name + ": " + a.Reason, "description": a.Message, "reason": a.Reason}
	} else {
		al.EndsAt = now.UTC().Format(time.RFC3339)
	}
	req, err := jsonRequest(http.MethodPost, strings.TrimSuffix(r.Address, "/")+"/api/v2/alerts", []alertmanagerAlert{al})
	if err == nil {
		setBasicOrBearer(req.Header, r)
	}
	return req, err
}
