package git

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"iter"
	"net"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"tether.dev/tether/api/v1alpha1"
)

// reason classes a git failure for conditions. SSH host key refusals are told apart
// by the check that made them, whatever the transport wrapped them in.
func (r *Remote) Reason(err error) string {
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
			return v1alpha1.ReasonAuthenticationFailed
		case errors.Is(e, transport.ErrRepositoryNotFound):
			return v1alpha1.ReasonRepositoryNotFound
		case errors.Is(e, transport.ErrEmptyRemoteRepository):
			// No branch at all: the one followed was deleted with the rest.
			return v1alpha1.ReasonRefNotFound
		case IsUntrustedCertificate(e):
			return v1alpha1.ReasonCertificateUntrusted
		case IsUnreachable(e):
			return v1alpha1.ReasonHostUnreachable
		}
	}
	return v1alpha1.ReasonGitOperation
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

func IsUntrustedCertificate(err error) bool {
	var unknown x509.UnknownAuthorityError
	var verification *tls.CertificateVerificationError
	var hostname x509.HostnameError
	return errors.As(err, &unknown) || errors.As(err, &verification) || errors.As(err, &hostname)
}

func IsUnreachable(err error) bool {
	var dns *net.DNSError
	var op *net.OpError
	var netErr net.Error
	return errors.As(err, &dns) || errors.As(err, &op) ||
		(errors.As(err, &netErr) && netErr.Timeout()) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ECONNREFUSED)
}
