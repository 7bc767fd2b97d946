package oci

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
)

// Repository is a repository of a registry, as oci://host[:port]/path names it.
type Repository struct {
	// Registry is the host[:port] spoken to; docker.io and index.docker.io
	// become registry-1.docker.io, the host Docker Hub serves the API on.
	Registry string
	// Path is the repository's path; a one-component path on Docker Hub gets
	// "library/" (oci://docker.io/nginx is library/nginx, as docker pull has it).
	Path string
	// PlainHTTP: loopback hosts (localhost, 127.0.0.0/8, ::1) are spoken to
	// over http, as docker does; any other over https.
	PlainHTTP bool
}

// dockerHub is the host Docker Hub's registry API is served on.
const dockerHub = "registry-1.docker.io"

// maxPathLength bounds a repository's path, as docker's reference grammar
// bounds a name.
const maxPathLength = 255

// repoPath is a repository path of the distribution spec: lower-case
// components separated by "/".
var repoPath = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)

// ParseURL reads "oci://host[:port]/path". The path may be empty (a
// registry's root, which Join completes: a chart repository names the
// registry and its charts' parent). User info, a query or a fragment are
// refused, as is a path outside the distribution spec's grammar. Errors
// quote at most a bounded, escaped part of raw: a URL may hold a password.
func ParseURL(raw string) (Repository, error) {
	rest, ok := strings.CutPrefix(raw, "oci://")
	if !ok {
		return Repository{}, fmt.Errorf("%.100q is not an OCI repository (oci://host/path)", withoutUserinfo(raw))
	}
	u, err := url.Parse("oci://" + rest)
	if err != nil || u.Host == "" {
		return Repository{}, errors.New("an OCI repository is oci://host[:port]/path; this one names no host that can be read")
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(rest, "#") {
		return Repository{}, errors.New("an OCI repository is oci://host[:port]/path, with no user, query or fragment")
	}
	if port := u.Port(); port != "" && !isPort(port) {
		return Repository{}, fmt.Errorf("%.100q is not a port", port)
	}
	return newRepository(u.Host, strings.Trim(u.Path, "/"))
}

// newRepository checks path and normalizes host and path: Docker Hub's names,
// its library/, and plain HTTP for loopback hosts.
func newRepository(host, path string) (Repository, error) {
	host = strings.ToLower(host)
	switch host {
	case "docker.io", "index.docker.io":
		host = dockerHub
	}
	if host == dockerHub && path != "" && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	if path != "" && (len(path) > maxPathLength || !repoPath.MatchString(path)) {
		return Repository{}, fmt.Errorf("%.100q is not a repository path of an OCI registry (lower-case letters, digits and separators, at most %d characters)", path, maxPathLength)
	}
	return Repository{Registry: host, Path: path, PlainHTTP: isLoopback(host)}, nil
}

// String is "oci://Registry/Path".
func (r Repository) String() string {
	if r.Path == "" {
		return "oci://" + r.Registry
	}
	return "oci://" + r.Registry + "/" + r.Path
}

// Join is the repository path + "/" + name: a chart's repository under
// spec.source.chart.repository (oci://host/charts + webapp), as Helm has it.
// On Docker Hub, the "library/" ParseURL gave a one-component path is taken
// back first (oci://docker.io/bitnamicharts + redis is bitnamicharts/redis):
// Docker Hub's library holds no repository below another.
func (r Repository) Join(name string) (Repository, error) {
	parent := r.Path
	if r.Registry == dockerHub && strings.Count(parent, "/") == 1 {
		parent = strings.TrimPrefix(parent, "library/")
	}
	path := strings.Trim(name, "/")
	if parent != "" {
		path = parent + "/" + path
	}
	return newRepository(r.Registry, path)
}

// isLoopback reports whether host (host[:port]) is localhost or a loopback
// address, which docker speaks to over plain HTTP.
func isLoopback(host string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.Trim(name, "[]")
	if name == "localhost" {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

func isPort(s string) bool {
	if len(s) > 5 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// withoutUserinfo drops what precedes an "@" after the scheme, so that a
// refused URL is never quoted with its password.
func withoutUserinfo(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	authority, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		authority = authority[i+1:]
	}
	if path == "" {
		return scheme + "://" + authority
	}
	return scheme + "://" + authority + "/" + path
}
