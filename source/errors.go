package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
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

// RedactURL removes credentials written into a URL ("https://user:token@host/..."),
// so that the URL can go into messages, logs and metric labels.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}

func (e *FetchError) Unwrap() error { return e.Err }

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

// Reasons a FetchError carries. Each names a cause a user can act on; the message
// says more.
const (
	// ReasonRefNotFound: the branch or tag does not exist on the remote (any more).
	ReasonRefNotFound = "RefNotFound"
	// ReasonNoMatchingTag: no tag of the remote satisfies the semver range.
	ReasonNoMatchingTag = "NoMatchingTag"
	// ReasonInvalidSemVer: the semver range cannot be parsed.
	ReasonInvalidSemVer = "InvalidSemVer"
	// ReasonUnsupportedRef: the ref names nothing this build can follow.
	ReasonUnsupportedRef = "UnsupportedRef"
	// ReasonGitOperation: any other failure of git itself.
	ReasonGitOperation = "GitOperationFailed"
	// ReasonUnsupportedURL: the URL's scheme is not one Tether speaks.
	ReasonUnsupportedURL = "UnsupportedURL"
	// ReasonCommitNotFound: a pinned commit is on no branch of the remote.
	ReasonCommitNotFound = "CommitNotFound"
	// ReasonCacheUnreadable: the on-disk cache was damaged; it is discarded and
	// the next fetch clones afresh.
	ReasonCacheUnreadable = "CacheUnreadable"
	// ReasonHostUnreachable: the host could not be reached (name resolution,
	// connection refused, timeout).
	ReasonHostUnreachable = "HostUnreachable"
	// ReasonAuthenticationFailed: the remote refused the credentials, or asked for
	// some and none were given.
	ReasonAuthenticationFailed = "AuthenticationFailed"
	// ReasonRepositoryNotFound: the host has no such repository (hosts also say so
	// to clients without access).
	ReasonRepositoryNotFound = "RepositoryNotFound"
	// ReasonInvalidCredentials: the credentials cannot be used as given (an
	// unreadable SSH key, an SSH URL without a key).
	ReasonInvalidCredentials = "InvalidCredentials"
	// ReasonHostKeyUnknown: known_hosts has no key for the SSH host.
	ReasonHostKeyUnknown = "HostKeyUnknown"
	// ReasonHostKeyMismatch: the SSH host presented a key that known_hosts does not
	// list for it: a changed host key, or someone in the middle.
	ReasonHostKeyMismatch = "HostKeyMismatch"
	// ReasonCacheFull: the git cache is over the agent's size cap
	// (--max-git-cache-bytes); the commit is fetched once repositories no Sync
	// uses have been removed, or the cap raised.
	ReasonCacheFull = "CacheFull"
	// ReasonHostBusy: the host already has as many fetches running as the agent
	// allows at once (a slow host); the caller retries shortly. Not a failure of
	// the Sync.
	ReasonHostBusy = "HostBusy"
	// ReasonHistoryRewritten: the ref now names a commit that does not descend
	// from the one applied through it (a force-push to an older commit, a
	// rewritten history). The caller holds the applied revision until the Sync
	// accepts the new commit (v1alpha1.AcceptRevisionAnnotation).
	ReasonHistoryRewritten = "HistoryRewritten"
	// ReasonCertificateUntrusted: the HTTPS certificate is not signed by a trusted
	// authority (see the caFile key).
	ReasonCertificateUntrusted = "CertificateUntrusted"
)

// reason classes a git failure for conditions. SSH host key refusals are told apart
// by the check that made them, whatever the transport wrapped them in.
func (r *remote) reason(err error) string {
	if r != nil && r.hostKey != nil {
		if reason := r.hostKey.reason(); reason != "" {
			return reason
		}
	}
	var ce *credentialsError
	if errors.As(err, &ce) {
		return ce.reason
	}
	for e := range gitCauses(err) {
		switch {
		case errors.Is(e, transport.ErrAuthenticationRequired), errors.Is(e, transport.ErrAuthorizationFailed),
			strings.Contains(e.Error(), "ssh: unable to authenticate"):
			return ReasonAuthenticationFailed
		case errors.Is(e, transport.ErrRepositoryNotFound):
			return ReasonRepositoryNotFound
		case errors.Is(e, transport.ErrEmptyRemoteRepository):
			// No branch at all: the one followed was deleted with the rest.
			return ReasonRefNotFound
		case isUntrustedCertificate(e):
			return ReasonCertificateUntrusted
		case isUnreachable(e):
			return ReasonHostUnreachable
		}
	}
	return ReasonGitOperation
}

// gitCauses yields err and every error it holds, outermost first: go-git wraps
// network and protocol errors in types without Unwrap (UnexpectedError,
// PermanentError), which this walk opens, and the rest are opened with
// errors.Unwrap, so that a message go-git made of a host's words (a plain error
// under a fmt wrapper or two) is seen wherever it sits.
func gitCauses(err error) iter.Seq[error] {
	return func(yield func(error) bool) {
		for e := err; e != nil; {
			if !yield(e) {
				return
			}
			switch x := e.(type) {
			case *plumbing.UnexpectedError:
				e = x.Err
			case *plumbing.PermanentError:
				e = x.Err
			default:
				e = errors.Unwrap(e)
			}
		}
	}
}

func isUntrustedCertificate(err error) bool {
	var unknown x509.UnknownAuthorityError
	var verification *tls.CertificateVerificationError
	var hostname x509.HostnameError
	return errors.As(err, &unknown) || errors.As(err, &verification) || errors.As(err, &hostname)
}

func isUnreachable(err error) bool {
	var dns *net.DNSError
	var op *net.OpError
	var netErr net.Error
	return errors.As(err, &dns) || errors.As(err, &op) ||
		(errors.As(err, &netErr) && netErr.Timeout()) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ECONNREFUSED)
}
