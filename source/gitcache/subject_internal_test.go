package gitcache

import (
	"strings"
	"testing"
)

func TestReadSubjectSkipsHeaders(t *testing.T) {
	raw := "tree abc\nparent def\nauthor a <a@b> 1 +0000\ngpgsig -----BEGIN-----\n \n line\n -----END-----\n\n\nSubject here\n\nbody\n"
	got, err := readSubject(strings.NewReader(raw))
	if err != nil || got != "Subject here" {
		t.Errorf("readSubject = %q, %v; want the subject", got, err)
	}
}

func FuzzReadSubject(f *testing.F) {
	f.Add("tree a\n\nsubject\n")
	f.Add("tree a\n" + strings.Repeat("x", 10000) + "\n\n" + strings.Repeat("y", 10000))
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := readSubject(strings.NewReader(raw))
		if err != nil {
			t.Fatalf("readSubject: %v", err)
		}
		if len(got) > MaxSubject*4 {
			t.Fatalf("subject of %d bytes, over the read bound", len(got))
		}
	})
}
