package verify

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Reason classes why an object is refused. It is this package's own class, not
// a condition reason: the caller maps it to one of api/v1alpha1's.
type Reason int

const (
	// Unsigned means the object carries no signature git would check.
	Unsigned Reason = iota + 1
	// Unsupported means the object is signed in a way this package does not
	// check: an x509 (gpgsm) signature, a signature of an unknown kind, an
	// object of a sha256 repository, an algorithm or hash that is refused.
	Unsupported
	// Unverifiable means the object cannot be judged at all: it is over
	// MaxObject, or its signature is malformed.
	Unverifiable
	// UnknownKey means the signature names a key the trusted keys do not hold.
	UnknownKey
	// BadSignature means the signature names a trusted key but does not verify
	// over the object (a tampered object, or a signature made for another
	// purpose).
	BadSignature
	// KeyNotValid means the trusted keys hold the signature's key but do not
	// trust it for this object: it is revoked, expired at the object's time,
	// outside the validity of its allowed_signers line, not trusted for the git
	// namespace, or not a signing key. But for the last, the signature is
	// known to verify.
	KeyNotValid
)

// String names the reason in words, for messages and tests.
func (r Reason) String() string {
	switch r {
	case Unsigned:
		return "unsigned"
	case Unsupported:
		return "unsupported"
	case Unverifiable:
		return "unverifiable"
	case UnknownKey:
		return "unknown key"
	case BadSignature:
		return "bad signature"
	case KeyNotValid:
		return "key not valid"
	default:
		return fmt.Sprintf("reason %d", int(r))
	}
}

// Error says why an object is refused. Its message never holds raw bytes of
// the object (they pass through a sanitizer) nor key material.
type Error struct {
	// Reason classes the refusal.
	Reason Reason
	// Signer is what the signature names, when known: the trusted key's
	// Signer.String() when the trusted keys hold it, otherwise the OpenPGP
	// issuer (fingerprint, or key id when the signature carries no
	// fingerprint) or the SSH key's SHA256 fingerprint; "" if none.
	Signer string
	// Err is the cause; nil for Unsigned.
	Err error
}

func (e *Error) Error() string {
	var msg string
	switch e.Reason {
	case Unsigned:
		msg = "not signed"
	case UnknownKey:
		msg = "signed by key " + e.Signer + " which the trusted keys do not hold"
		if e.Signer == "" {
			msg = "signed by a key the trusted keys do not hold"
		}
	case BadSignature:
		msg = "the signature by " + e.Signer + " does not verify"
	case KeyNotValid:
		msg = "signed by " + e.Signer + ", whose key is not valid for it"
	case Unsupported:
		msg = "the signature cannot be checked"
	default:
		msg = "the object cannot be verified"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// ReasonOf is the Reason of the *Error in err's chain, or 0 when there is none.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return 0
}

// refuse builds an *Error.
func refuse(reason Reason, signer string, err error) *Error {
	return &Error{Reason: reason, Signer: signer, Err: err}
}

// KeyError says which entry of the Secret's data could not be read as trusted
// keys. Its message names the entry (and the line of an allowed_signers entry)
// and never quotes the entry's content.
type KeyError struct {
	// Entry is the data key of the Secret.
	Entry string
	// Line is the 1-based line of an allowed_signers entry; 0 for OpenPGP keys.
	Line int
	// Err is the cause.
	Err error
}

func (e *KeyError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("entry %s: %v", sanitize(e.Entry), e.Err)
	}
	return fmt.Sprintf("entry %s: line %d: %v", sanitize(e.Entry), e.Line, e.Err)
}

func (e *KeyError) Unwrap() error { return e.Err }

// ErrNoKeys is returned by ParseKeys for data that holds no key at all.
var ErrNoKeys = errors.New("holds no trusted key: give armored OpenPGP public keys or SSH allowed_signers lines")

// maxQuoted bounds how much of a sanitized text a message quotes.
const maxQuoted = 120

// sanitize makes s fit for a message: it drops control characters, invalid
// UTF-8 and other runes that do not print, and cuts the rest short.
func sanitize(s string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			continue
		}
		if n == maxQuoted {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// quiet wraps an error a library returned about hostile input: its message
// passes through sanitize, since libraries may quote what they could not read.
// errors.Is and errors.As still see the library's error.
func quiet(err error) error {
	if err == nil {
		return nil
	}
	return &sanitized{err: err}
}

type sanitized struct{ err error }

func (s *sanitized) Error() string { return sanitize(s.err.Error()) }
func (s *sanitized) Unwrap() error { return s.err }
