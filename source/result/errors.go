package result

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// FetchError is a failure to reach or read the repository: a network error, bad
// credentials, a ref that does not exist. It is usually transient, and the caller
// retries with backoff while keeping the last good state applied.
type FetchError struct {
	// URL of the repository.
	URL string
	// Ref that was being resolved, as written in the Sync ("main", "v1.2.0").
	Ref string
	// Reason is a short CamelCase class of failure for conditions ("RefNotFound").
	Reason string
	Err    error
}

func (e *FetchError) Error() string {
	return fmt.Sprintf("%s (ref %s): %v", RedactURL(e.URL), e.Ref, e.Err)
}

func (e *FetchError) Unwrap() error { return e.Err }

// RedactURL removes credentials written into a URL ("https://user:token@host/..."),
// so that the URL can go into messages, logs and metric labels. The rule does not
// depend on the URL parsing, since a password holding '%', '#' or a space makes
// net/url refuse it: whatever lies between "://" and the last '@' before the
// first '/' after it is userinfo, and goes. A URL that does not parse and holds
// an '@' after the first '/' (a password with a '/' in it) loses everything up to
// its last '@': a broken URL is better shown short than with a secret in it.
func RedactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw // scp-like "git@host:path" carries a user name, never a password
	}
	authority, _, _ := strings.Cut(rest, "/")
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		return scheme + "://" + rest[at+1:]
	}
	if _, err := url.Parse(raw); err != nil {
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			return scheme + "://" + rest[at+1:]
		}
	}
	return raw
}

// RenderError is a failure to turn a revision into objects: broken YAML, a manifest
// without a kind, a kustomize build error, a path that leaves the repository. It is
// caused by repository content, so retrying the same revision cannot help.
type RenderError struct {
	// File (or directory) at fault, relative to the repository root.
	File string
	// Reason classes the failure for conditions when it has a class of its own
	// (v1alpha1.ReasonRenderLimitExceeded); empty means RenderFailed.
	Reason string
	Err    error
}

func (e *RenderError) Error() string {
	if e.File == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *RenderError) Unwrap() error { return e.Err }

// IsRenderError reports whether err was caused by repository content.
func IsRenderError(err error) bool {
	var re *RenderError
	return errors.As(err, &re)
}
