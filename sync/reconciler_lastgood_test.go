package sync

import "testing"

func TestParseRevisionReadsWhatStatusWrites(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		in          string
		ref, commit string
		ok          bool
	}{
		{"main@sha1:" + sha, "main", sha, true},
		{"release/v1@sha1:" + sha, "release/v1", sha, true},
		{"v1.2.0@sha1:" + sha, "v1.2.0", sha, true},
		{"sha1:" + sha, "", sha, true},
		{"", "", "", false},
		{"main", "", "", false},
		{"main@sha1:", "", "", false},
		{"mainsha1:" + sha, "", "", false},
	} {
		ref, commit, ok := parseRevision(tc.in)
		if ref != tc.ref || commit != tc.commit || ok != tc.ok {
			t.Errorf("parseRevision(%q) = %q, %q, %v; want %q, %q, %v", tc.in, ref, commit, ok, tc.ref, tc.commit, tc.ok)
		}
	}
}
