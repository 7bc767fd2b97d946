package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/git"
)

// Error is every failure of the Client. Reason is one of api/v1alpha1's
// reasons: AuthenticationFailed (a 401 or 403, of the registry or its token
// server), RepositoryNotFound (a 404 on the repository, a tag or a digest),
// HostUnreachable, CertificateUntrusted, RenderLimitExceeded (a bound of
// Options), UnsupportedURL (a repository or reference that is not one), or
// RegistryFailed (any other error answer, or one the distribution spec does
// not allow). Its message names what was read ("the manifest of org/app:v1")
// and the cause by its status ("HTTP 401 Unauthorized"): never the registry's
// answer, its error details, a URL with its query, nor a credential. oras-go's
// errors carry all of these, so none of them is wrapped as it is.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// limitError is a bound of Options reached.
func limitError(format string, args ...any) error {
	return &Error{Reason: v1alpha1.ReasonRenderLimitExceeded, Err: fmt.Errorf(format, args...)}
}

// registryError is an answer the distribution spec does not allow.
func registryError(format string, args ...any) error {
	return &Error{Reason: v1alpha1.ReasonRegistryFailed, Err: fmt.Errorf(format, args...)}
}

// Failures of the distribution spec found by a call's own checks.
var (
	errTagListElsewhere = errors.New("the tag list's next page is on another host")
	errPlainHTTP        = errors.New("the registry sent a request with credentials to a host over plain http")
)

// wrap classes err, a failure of oras-go or of the HTTP conversation while
// reading what, into an Error whose message is ours alone.
func wrap(what string, err error) error { return wrapAs("reading", what, err) }

// wrapAs is wrap for another verb ("pushing").
func wrapAs(verb, what string, err error) error {
	var own *Error
	if errors.As(err, &own) {
		return own
	}
	reason, cause := classify(err)
	return &Error{Reason: reason, Err: fmt.Errorf("%s %s: %w", verb, what, cause)}
}

// classify is err's reason and a cause safe to print.
func classify(err error) (string, error) {
	var answer *errcode.ErrorResponse
	switch {
	case errors.As(err, &answer):
		return statusReason(answer.StatusCode), errors.New(git.StatusText(answer.StatusCode))
	case errors.Is(err, errdef.ErrNotFound):
		return v1alpha1.ReasonRepositoryNotFound, errors.New(git.StatusText(http.StatusNotFound))
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return v1alpha1.ReasonAuthenticationFailed, errors.New("the registry asks for a username and password, and none is given")
	case errors.Is(err, errPlainHTTP):
		return v1alpha1.ReasonRegistryFailed, errPlainHTTP
	case errors.Is(err, errTagListElsewhere):
		return v1alpha1.ReasonRegistryFailed, errTagListElsewhere
	case errors.Is(err, content.ErrMismatchedDigest):
		return v1alpha1.ReasonRegistryFailed, errors.New("its content does not match its digest")
	case errors.Is(err, content.ErrTrailingData), errors.Is(err, io.ErrUnexpectedEOF):
		return v1alpha1.ReasonRegistryFailed, errors.New("its content is not of the size its descriptor says")
	case git.IsUntrustedCertificate(err):
		return v1alpha1.ReasonCertificateUntrusted, git.WithoutURL(err)
	case errors.Is(err, context.DeadlineExceeded):
		return v1alpha1.ReasonHostUnreachable, context.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return v1alpha1.ReasonHostUnreachable, context.Canceled
	case git.IsUnreachable(err):
		return v1alpha1.ReasonHostUnreachable, git.WithoutURL(err)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return v1alpha1.ReasonRegistryFailed, git.WithoutURL(err)
	}
	return v1alpha1.ReasonRegistryFailed, errors.New("the registry's answer is not of the distribution spec")
}

// statusReason classes an HTTP status of a registry or its token server.
func statusReason(code int) string {
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		return v1alpha1.ReasonAuthenticationFailed
	case http.StatusNotFound:
		return v1alpha1.ReasonRepositoryNotFound
	}
	return v1alpha1.ReasonRegistryFailed
}
