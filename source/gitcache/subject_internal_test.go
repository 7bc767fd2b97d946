package gitcache

import (
	"strings"
	"testing"
)

func TestReadSummarySkipsHeaders(t *testing.T) {
	raw := "tree abc\nparent def\nauthor Ada Lovelace <a@b> 1 +0000\ncommitter c <c@d> 1 +0000\ngpgsig -----BEGIN-----\n \n line\n -----END-----\n\n\nSubject here\n\nbody\n"
	got, err := readSummary(strings.NewReader(raw))
	if want := (Summary{Subject: "Subject here", Author: "Ada Lovelace"}); err != nil || got != want {
		t.Errorf("readSummary = %+v, %v; want %+v", got, err, want)
	}
}

func TestAuthorNameLeavesTheEmailOut(t *testing.T) {
	for in, want := range map[string]string{
		"Ada Lovelace <ada@example.com> 1 +0000": "Ada Lovelace",
		"<nobody@example.com> 1 +0000":           "",
		"no email at all":                        "",
		"a <b> <c> 1 +0000":                      "a",
	} {
		if got := authorName(in); got != want {
			t.Errorf("authorName(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzReadSummary(f *testing.F) {
	f.Add("tree a\n\nsubject\n")
	f.Add("author x <y> 1 +0000\n\nsubject\n")
	f.Add("tree a\n" + strings.Repeat("x", 10000) + "\n\n" + strings.Repeat("y", 10000))
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := readSummary(strings.NewReader(raw))
		if err != nil {
			t.Fatalf("readSummary: %v", err)
		}
		if len(got.Subject) > MaxSubject*4 || len(got.Author) > MaxSubject*4 {
			t.Fatalf("subject of %d bytes or author of %d, over the read bound", len(got.Subject), len(got.Author))
		}
	})
}
