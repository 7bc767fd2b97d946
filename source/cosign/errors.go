package cosign

import (
	"errors"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
)

// Reason classes why an artifact is refused. It is this package's own class,
// named as a condition reason reads; the caller maps it to one of
// api/v1alpha1's.
type Reason string

const (
	// NotSigned means nothing in the registry claims to sign the artifact: no
	// manifest tagged with its SignatureTag and no Sigstore bundle among its
	// referrers.
	NotSigned Reason = "NotSigned"
	// UntrustedSignature means the artifact has signatures, but none verifies
	// by a trusted key: made by another key, or over other bytes (a tampered
	// payload).
	UntrustedSignature Reason = "UntrustedSignature"
	// InvalidSignature means a signature cannot stand: it is malformed or
	// over a bound, or a trusted key signed a payload that names another
	// artifact (another digest, another repository) and was copied here.
	InvalidSignature Reason = "InvalidSignature"
)

// Error says why Verify refused an artifact. Its message names the artifact's
// digest, the signatures read (by layer index or bundle digest) and the key
// names, never bytes of a payload, a signature or a key.
type Error struct {
	// Reason classes the refusal.
	Reason Reason
	// Subject is the digest of the artifact's manifest.
	Subject digest.Digest
	// Causes says, for each signature read, why it did not verify; empty for
	// NotSigned.
	Causes []error
}

func (e *Error) Error() string {
	var msg string
	switch e.Reason {
	case NotSigned:
		msg = "not signed: no cosign signature refers to it"
	case UntrustedSignature:
		msg = "no signature by a trusted key"
	default:
		msg = "invalid signature"
	}
	msg = "artifact " + string(e.Subject) + ": " + msg
	if len(e.Causes) == 0 {
		return msg
	}
	causes := make([]string, len(e.Causes))
	for i, c := range e.Causes {
		causes[i] = c.Error()
	}
	return msg + ": " + strings.Join(causes, "; ")
}

// Unwrap gives errors.Is and errors.As the causes.
func (e *Error) Unwrap() []error { return e.Causes }

// ReasonOf is the Reason of the *Error in err's chain, or "" when there is
// none (an I/O error of the Fetcher, say, which is worth a retry).
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// sigError says why one signature did not verify. Where names it (a layer of
// the signature manifest, a bundle), reason classes it.
type sigError struct {
	where  string
	reason Reason
	err    error
}

func (s *sigError) Error() string { return s.where + ": " + s.err.Error() }
func (s *sigError) Unwrap() error { return s.err }

// refusal classes what the signatures read amount to: InvalidSignature when
// any could not stand (the graver finding: a trusted key's signature copied
// onto another artifact, or a malformed one), UntrustedSignature otherwise,
// NotSigned when there was none.
func refusal(subject digest.Digest, causes []*sigError) *Error {
	e := &Error{Reason: NotSigned, Subject: subject}
	for _, c := range causes {
		e.Causes = append(e.Causes, c)
		if e.Reason != InvalidSignature {
			e.Reason = c.reason
		}
	}
	return e
}

// KeyError says which entry of the Secret's data could not be read as a
// trusted key. Its message names the entry, never its content.
type KeyError struct {
	// Entry is the data key of the Secret.
	Entry string
	// Err is the cause.
	Err error
}

func (e *KeyError) Error() string { return fmt.Sprintf("entry %q: %v", e.Entry, e.Err) }

func (e *KeyError) Unwrap() error { return e.Err }

// ErrNoKeys is returned by ParseKeys for data that holds no entry at all.
var ErrNoKeys = errors.New("holds no trusted key: give cosign public keys (cosign.pub), one PEM key per entry")
