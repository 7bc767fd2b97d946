package cosign

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorMessage(t *testing.T) {
	const d = "sha256:97fc222cee7991b5b061d4d4afdb5f3428fcb0c9054e1690313786befa1e4e36"
	layer := &sigError{where: "signature layer 0 of x.sig", reason: UntrustedSignature, err: errors.New("not signed by a trusted key")}
	bad := &sigError{where: "bundle sha256:ab", reason: InvalidSignature, err: errors.New("names another digest")}
	tests := []struct {
		err  *Error
		want string
	}{
		{err: refusal(d, nil), want: "artifact " + d + ": not signed: no cosign signature refers to it"},
		{err: refusal(d, []*sigError{layer}), want: "artifact " + d + ": no signature by a trusted key: signature layer 0 of x.sig: not signed by a trusted key"},
		{err: refusal(d, []*sigError{bad, layer}), want: "artifact " + d + ": invalid signature: bundle sha256:ab: names another digest; signature layer 0 of x.sig: not signed by a trusted key"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.err.Reason, got, tt.want)
		}
	}
	if r := refusal(d, []*sigError{layer, bad}).Reason; r != InvalidSignature {
		t.Errorf("an invalid signature after an untrusted one: %s, want InvalidSignature", r)
	}
}

func TestReasonOf(t *testing.T) {
	err := fmt.Errorf("artifact: %w", refusal("sha256:ab", nil))
	if got := ReasonOf(err); got != NotSigned {
		t.Errorf("ReasonOf(wrapped) = %q, want NotSigned", got)
	}
	if got := ReasonOf(errors.New("registry unavailable")); got != "" {
		t.Errorf("ReasonOf(other) = %q, want none", got)
	}
}

func TestSignerString(t *testing.T) {
	if got, want := (Signer{Key: "cosign.pub", Fingerprint: "SHA256:abc"}).String(), "cosign key cosign.pub (SHA256:abc)"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got := (Signer{}).String(); got != "" {
		t.Errorf("the zero Signer reads %q", got)
	}
}
