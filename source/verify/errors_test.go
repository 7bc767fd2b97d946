package verify

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestSanitize(t *testing.T) {
	tests := []struct{ in, want string }{
		{in: "namespace file", want: "namespace file"},
		{in: "a\x1b[31mred\x1b[0m", want: "a[31mred[0m"},
		{in: "line\nbreak\r\ttab\x00", want: "linebreaktab"},
		{in: "right\u202eto left", want: "rightto left"},
		{in: "bad \xff\xfe utf-8", want: "bad  utf-8"},
		{in: "héllo, 世界", want: "héllo, 世界"},
		{in: strings.Repeat("é", maxQuoted+5), want: strings.Repeat("é", maxQuoted) + "…"},
		{in: strings.Repeat("é", maxQuoted), want: strings.Repeat("é", maxQuoted)},
	}
	for _, tt := range tests {
		if got := sanitize(tt.in); got != tt.want {
			t.Errorf("sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	alice := Signer{Method: "openpgp", Identity: "Alice <alice@example.com>", Key: "0123ABCD"}
	cause := errors.New("openpgp: invalid signature")
	tests := []struct {
		err  *Error
		want string
	}{
		{err: &Error{Reason: Unsigned}, want: "not signed"},
		{err: &Error{Reason: UnknownKey, Signer: "SHA256:abc"}, want: "signed by key SHA256:abc which the trusted keys do not hold"},
		{err: &Error{Reason: UnknownKey}, want: "signed by a key the trusted keys do not hold"},
		{err: &Error{Reason: BadSignature, Signer: alice.String(), Err: cause}, want: "the signature by Alice <alice@example.com> (openpgp 0123ABCD) does not verify: openpgp: invalid signature"},
		{err: &Error{Reason: KeyNotValid, Signer: "ci@example.com (ssh SHA256:abc)", Err: errors.New("the key is revoked")}, want: "signed by ci@example.com (ssh SHA256:abc), whose key is not valid for it: the key is revoked"},
		{err: &Error{Reason: Unsupported, Err: errSHA256}, want: "the signature cannot be checked: objects of sha256 repositories are not supported"},
		{err: &Error{Reason: Unverifiable, Err: errors.New("too large")}, want: "the object cannot be verified: too large"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.err.Reason, got, tt.want)
		}
	}
}

func TestReasonOf(t *testing.T) {
	err := fmt.Errorf("commit 1234: %w", refuse(BadSignature, "", nil))
	if got := ReasonOf(err); got != BadSignature {
		t.Errorf("ReasonOf(wrapped) = %s, want %s", got, BadSignature)
	}
	if got := ReasonOf(errors.New("fetch failed")); got != 0 {
		t.Errorf("ReasonOf(other) = %s, want 0", got)
	}
}

func TestQuiet(t *testing.T) {
	cause := fmt.Errorf("invalid PEM type %s", "\x1b]0;pwned\x07")
	err := quiet(cause)
	if got := err.Error(); got != "invalid PEM type ]0;pwned" {
		t.Errorf("message %q", got)
	}
	if !errors.Is(err, cause) {
		t.Error("quiet hides the cause from errors.Is")
	}
}
