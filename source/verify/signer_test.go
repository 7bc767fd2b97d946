package verify

import "testing"

func TestSignerString(t *testing.T) {
	tests := []struct {
		s    Signer
		want string
	}{
		{s: Signer{Method: "openpgp", Identity: "Alice <alice@example.com>", Key: "0123ABCD"}, want: "Alice <alice@example.com> (openpgp 0123ABCD)"},
		{s: Signer{Method: "ssh", Identity: "ci@example.com", Key: "SHA256:abc"}, want: "ci@example.com (ssh SHA256:abc)"},
		{s: Signer{Method: "openpgp", Key: "0123ABCD"}, want: "openpgp key 0123ABCD"},
		{s: Signer{}, want: ""},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.s, got, tt.want)
		}
	}
}
