package ui

import (
	"net/url"
	"path"
	"regexp"
	"strings"
)

// gitLayout is how a kind of git host lays out the web page of a directory at a
// commit: the repository's path, then what follows it before the commit, and
// how many segments a repository's path has (0: any, as GitLab's subgroups).
type gitLayout struct {
	before   string // "/tree/" (GitHub), "/-/tree/" (GitLab), "/src/" (Bitbucket), "/src/commit/" (Gitea)
	segments int
}

var (
	githubLayout    = gitLayout{before: "/tree/", segments: 2}
	gitlabLayout    = gitLayout{before: "/-/tree/"}
	bitbucketLayout = gitLayout{before: "/src/", segments: 2}
	giteaLayout     = gitLayout{before: "/src/commit/", segments: 2}
)

// wellKnownHosts are the public hosts whose layout is known for certain.
var wellKnownHosts = map[string]gitLayout{
	"github.com":    githubLayout,
	"gitlab.com":    gitlabLayout,
	"bitbucket.org": bitbucketLayout,
	"codeberg.org":  giteaLayout, // Forgejo, Gitea's fork: the same pages
	"gitea.com":     giteaLayout,
}

// layoutOf is the layout of host. Beyond the well-known hosts, a self-hosted
// server's software cannot be known from its URL; but one whose first label
// names it (gitlab.example.com, gitea.example.com, forgejo.example.com) is by
// convention that software, and a wrong guess costs a link that answers 404,
// nothing more. Any other host gets no link.
func layoutOf(host string) (gitLayout, bool) {
	if l, ok := wellKnownHosts[host]; ok {
		return l, true
	}
	first, _, _ := strings.Cut(host, ".")
	switch first {
	case "gitlab":
		return gitlabLayout, true
	case "gitea", "forgejo":
		return giteaLayout, true
	}
	return gitLayout{}, false
}

// scpLike is git's short form of an SSH URL: user@host:path.
var scpLike = regexp.MustCompile(`^[A-Za-z0-9._-]+@([A-Za-z0-9.-]+):(.+)$`)

// commitHash is a full SHA-1 or SHA-256 commit hash.
var commitHash = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// gitWebURL is the web page of directory dir at commit in the repository
// cloned from repo (https://, http://, ssh:// or user@host:path), when its host's
// layout is known (layoutOf); "" otherwise. The page is always served over
// https, except for a repository cloned over http (a self-hosted server without
// TLS), and on the clone URL's port for http(s) only (an SSH port is not the web
// server's). No user name, password or token of repo reaches the link.
func gitWebURL(repo, commit, dir string) string {
	if !commitHash.MatchString(commit) {
		return ""
	}
	scheme, host, repoPath, ok := splitRepoURL(repo)
	if !ok {
		return ""
	}
	layout, ok := layoutOf(strings.ToLower(strings.TrimSuffix(hostOnly(host), ".")))
	if !ok {
		return ""
	}
	segments, ok := pathSegments(strings.TrimSuffix(strings.Trim(repoPath, "/"), ".git"))
	if !ok || len(segments) < 2 || (layout.segments > 0 && len(segments) != layout.segments) {
		return ""
	}
	out := scheme + "://" + host + "/" + strings.Join(segments, "/") + layout.before + commit
	if d := strings.Trim(path.Clean("/"+dir), "/"); d != "" {
		ds, ok := pathSegments(d)
		if !ok {
			return ""
		}
		out += "/" + strings.Join(ds, "/")
	}
	return out
}

// splitRepoURL is the scheme of the web page, the host (with a port, for
// http(s)) and the repository's path of a clone URL, its userinfo dropped.
func splitRepoURL(repo string) (scheme, host, repoPath string, ok bool) {
	if !strings.Contains(repo, "://") {
		m := scpLike.FindStringSubmatch(repo)
		if m == nil {
			return "", "", "", false
		}
		return "https", m[1], m[2], true
	}
	u, err := url.Parse(repo)
	if err != nil || u.Hostname() == "" {
		return "", "", "", false
	}
	switch u.Scheme {
	case "https", "http":
		return u.Scheme, u.Host, u.Path, true
	case "ssh", "git+ssh":
		return "https", u.Hostname(), u.Path, true
	}
	return "", "", "", false
}

// hostOnly is host without its port.
func hostOnly(host string) string {
	if h, _, ok := strings.Cut(host, ":"); ok && !strings.Contains(h, "[") {
		return h
	}
	return host
}

// pathSegments are p's segments, each escaped for a URL's path; ok is false
// when one is empty, "." or "..".
func pathSegments(p string) ([]string, bool) {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if s == "" || s == "." || s == ".." {
			return nil, false
		}
		parts[i] = url.PathEscape(s)
	}
	return parts, true
}
