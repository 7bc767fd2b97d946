package verify

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseTimestamp(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time // zero: refused
	}{
		{in: "20200102", want: time.Date(2020, 1, 2, 0, 0, 0, 0, time.UTC)},
		{in: "20200102Z", want: time.Date(2020, 1, 2, 0, 0, 0, 0, time.UTC)},
		{in: "202001021504", want: time.Date(2020, 1, 2, 15, 4, 0, 0, time.UTC)},
		{in: "20200102150405", want: time.Date(2020, 1, 2, 15, 4, 5, 0, time.UTC)},
		{in: "20200102150405Z", want: time.Date(2020, 1, 2, 15, 4, 5, 0, time.UTC)},
		{in: ""},
		{in: "Z"},
		{in: "2020010"},
		{in: "2020-01-02"},
		{in: "20200102ZZ"},
		{in: "+2020010"},
		{in: "20200230"},
		{in: "20200102250000"},
		{in: "20200102z"},
	}
	for _, tt := range tests {
		got, err := parseTimestamp(tt.in)
		if tt.want.IsZero() {
			if err == nil {
				t.Errorf("parseTimestamp(%q) = %v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || !got.Equal(tt.want) || got.Location() != time.UTC {
			t.Errorf("parseTimestamp(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestSplitPrincipals(t *testing.T) {
	tests := []struct {
		line string
		want []string // nil: refused
		rest string
	}{
		{line: "a@example.com ssh-ed25519 AAAA", want: []string{"a@example.com"}, rest: "ssh-ed25519 AAAA"},
		{line: "a,b\tssh-ed25519 AAAA", want: []string{"a", "b"}, rest: "ssh-ed25519 AAAA"},
		{line: `"a b",c  namespaces="git" ssh-ed25519 AAAA`, want: []string{"a b", "c"}, rest: `namespaces="git" ssh-ed25519 AAAA`},
		{line: `"a,b" ssh-ed25519 AAAA`, want: []string{"a,b"}, rest: "ssh-ed25519 AAAA"},
		{line: `a"b c"d ssh-ed25519 AAAA`, want: []string{"ab cd"}, rest: "ssh-ed25519 AAAA"},
		{line: `"a b ssh-ed25519 AAAA`},
		{line: "a,,b ssh-ed25519 AAAA"},
		{line: `"" ssh-ed25519 AAAA`},
		{line: "a@example.com"},
		{line: "a@example.com   "},
	}
	for _, tt := range tests {
		got, rest, err := splitPrincipals(tt.line)
		if tt.want == nil {
			if err == nil {
				t.Errorf("splitPrincipals(%q) = %q, %q; want an error", tt.line, got, rest)
			}
			continue
		}
		if err != nil || rest != tt.rest {
			t.Errorf("splitPrincipals(%q) = %q, %q, %v; want rest %q", tt.line, got, rest, err, tt.rest)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("splitPrincipals(%q) (-want +got):\n%s", tt.line, diff)
		}
	}
}
