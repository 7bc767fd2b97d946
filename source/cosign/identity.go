package cosign

import (
	"errors"
	"strings"
)

// Docker Hub, as cosign names it in the payloads it writes: its references
// are parsed by go-containerregistry, which writes "docker.io" and the
// implicit host alike as "index.docker.io" and gives a one-part repository
// the "library/" namespace.
const (
	dockerHub      = "index.docker.io"
	dockerHubAlias = "docker.io"
)

// repository is a registry host and a repository path, normalized as cosign
// writes a simple-signing payload's docker-reference.
type repository struct {
	host string
	path string
}

func (r repository) String() string { return r.host + "/" + r.path }

// parseRepository reads "host/path" (the host optional for Docker Hub), with
// no tag or digest, and normalizes it as go-containerregistry does: the first
// part is the host only when it holds a '.' or a ':'.
func parseRepository(s string) (repository, error) {
	if s == "" {
		return repository{}, errors.New("is empty")
	}
	r := repository{host: dockerHub, path: s}
	if host, path, ok := strings.Cut(s, "/"); ok && strings.ContainsAny(host, ".:") {
		r = repository{host: host, path: path}
	}
	if r.host == dockerHubAlias {
		r.host = dockerHub
	}
	if !validPath(r.path) {
		return repository{}, errors.New("is not a repository: lower-case letters, digits and separators [._-/] after the host")
	}
	if !validHost(r.host) {
		return repository{}, errors.New("has no valid registry host")
	}
	if r.host == dockerHub && !strings.Contains(r.path, "/") {
		r.path = "library/" + r.path
	}
	return r, nil
}

// validPath holds a repository path to the distribution spec's characters:
// components of [a-z0-9] separated by '.', '_', '-' and '/', none empty.
func validPath(p string) bool {
	if p == "" || len(p) > 255 {
		return false
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" {
			return false
		}
		for _, c := range part {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '.' && c != '_' && c != '-' {
				return false
			}
		}
	}
	return true
}

// validHost holds a registry host to letters, digits, '.', '-', and one
// ':port'.
func validHost(h string) bool {
	name, port, hasPort := strings.Cut(h, ":")
	if name == "" || len(h) > 255 || (hasPort && port == "") {
		return false
	}
	for _, c := range name {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '.' && c != '-' {
			return false
		}
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
