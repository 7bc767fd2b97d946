package source_test

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
)

func TestSubjectIsTheFirstLineMadeSafe(t *testing.T) {
	repo := gitserver.NewLocalRepo(t, "deploy")
	src := newSource(t, source.Options{})
	req := source.Request{URL: repo.URL(), Ref: main}
	for _, tc := range []struct {
		name, message, want string
	}{
		{"a plain subject", "Fix the config map", "Fix the config map"},
		{"the body is left out", "Scale web to 3\n\nBecause the load doubled.\nSigned-off-by: a", "Scale web to 3"},
		{"terminal escapes and tabs become spaces", "\x1b[31mred\x1b[0m\ttext", "[31mred [0m text"},
		{"bidi overrides and zero-width characters go", "admin\u202euser\u200b ok", "admin user ok"},
		{"a long subject is cut, marked", strings.Repeat("é", 300), strings.Repeat("é", 98) + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			commit := repo.Commit(t, map[string]string{"cm.yaml": configMap("web", tc.name)}, tc.message)
			fetch(t, src, req)
			got, err := src.Summary(repo.URL(), commit)
			if err != nil || got.Subject != tc.want || got.Author != gitserver.AuthorName {
				t.Errorf("Summary = %+v, %v; want subject %q by %q", got, err, tc.want, gitserver.AuthorName)
			}
		})
	}
	t.Run("a commit the cache never saw is unknown", func(t *testing.T) {
		_, err := src.Summary(repo.URL(), strings.Repeat("ab", 20))
		if !errors.Is(err, source.ErrHistoryUnknown) {
			t.Errorf("Summary of an unknown commit: %v, want ErrHistoryUnknown", err)
		}
	})
}

func TestOneLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 10, "plain"},
		{"  many   spaces\r\n", 20, "many spaces"},
		{"bad \xff utf8", 20, "bad utf8"},
		{"abcdefghij", 8, "abcde…"},
		{"ééééé", 6, "é…"},
	} {
		if got := source.OneLine(tc.in, tc.max); got != tc.want {
			t.Errorf("OneLine(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func FuzzOneLine(f *testing.F) {
	f.Add("\x1b]8;;http://x\x07link\u202e", 40)
	f.Add(strings.Repeat("€", 100), 7)
	f.Fuzz(func(t *testing.T, in string, max int) {
		if max < 4 || max > 1000 {
			return
		}
		out := source.OneLine(in, max)
		if len(out) > max || !utf8.ValidString(out) {
			t.Fatalf("OneLine(%q, %d) = %q: longer than the bound or invalid UTF-8", in, max, out)
		}
		for _, r := range out {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
				t.Fatalf("OneLine(%q) = %q keeps %U", in, out, r)
			}
		}
	})
}
