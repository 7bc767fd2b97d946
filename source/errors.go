package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"iter"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"tether.dev/tether/api/v1alpha1"
)

// checkUserinfo refuses a URL that carries credentials (by RedactURL's rule)
// but does not parse: git or net/http would quote it whole in their errors. The
// message does not quote it either, not even redacted: what does not parse may
// hide more of the secret than the rule finds.
func checkUserinfo(raw string) error {
	if RedactURL(raw) == raw {
		return nil
	}
	if _, err := url.Parse(raw); err != nil {
		return errors.New("the URL holds credentials but is not a valid URL: percent-encode the user name and " +
			"password ('%' as %25, '#' as %23, '/' as %2F, a space as %20), or give them in spec.source.secretRef")
	}
	return nil
}

// Reasons a FetchError carries: the reasons of git failures that api/v1alpha1
// declares, with what each means (v1alpha1.Reasons). Each names a cause a user can
// act on; the message says more.
const (
	ReasonRefNotFound           = v1alpha1.ReasonRefNotFound
	ReasonNoMatchingTag         = v1alpha1.ReasonNoMatchingTag
	ReasonInvalidSemVer         = v1alpha1.ReasonInvalidSemVer
	ReasonUnsupportedRef        = v1alpha1.ReasonUnsupportedRef
	ReasonGitOperation          = v1alpha1.ReasonGitOperation
	ReasonUnsupportedURL        = v1alpha1.ReasonUnsupportedURL
	ReasonCommitNotFound        = v1alpha1.ReasonCommitNotFound
	ReasonCacheUnreadable       = v1alpha1.ReasonCacheUnreadable
	ReasonHostUnreachable       = v1alpha1.ReasonHostUnreachable
	ReasonAuthenticationFailed  = v1alpha1.ReasonAuthenticationFailed
	ReasonRepositoryNotFound    = v1alpha1.ReasonRepositoryNotFound
	ReasonInvalidCredentials    = v1alpha1.ReasonInvalidCredentials
	ReasonHostKeyUnknown        = v1alpha1.ReasonHostKeyUnknown
	ReasonHostKeyMismatch       = v1alpha1.ReasonHostKeyMismatch
	ReasonCacheFull             = v1alpha1.ReasonCacheFull
	ReasonHostBusy              = v1alpha1.ReasonHostBusy
	ReasonHistoryRewritten      = v1alpha1.ReasonHistoryRewritten
	ReasonCertificateUntrusted  = v1alpha1.ReasonCertificateUntrusted
	ReasonChartNotFound         = v1alpha1.ReasonChartNotFound
	ReasonChartRepositoryFailed = v1alpha1.ReasonChartRepositoryFailed
	ReasonRenderLimitExceeded   = v1alpha1.ReasonRenderLimitExceeded
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
			switch x := e.(type) { //nolint:errorlint // this walk looks at each layer in turn; errors.As would skip those in between
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
