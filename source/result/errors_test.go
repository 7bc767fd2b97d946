package result_test

import (
	"testing"

	"tether.dev/tether/source/result"
)

func TestRedactURLRemovesCredentialsWhetherTheURLParsesOrNot(t *testing.T) {
	cases := []struct{ step, raw, want string }{
		{"a parsing URL loses its userinfo", "https://user:token@git.example.com/org/deploy.git", "https://git.example.com/org/deploy.git"},
		{"a password with '%' (not a valid escape)", "https://user:50%off@git.example.com/org/deploy.git", "https://git.example.com/org/deploy.git"},
		{"a password with '#'", "https://user:pa#ss@git.example.com/org/deploy.git", "https://git.example.com/org/deploy.git"},
		{"a password with a space", "https://user:pa ss@git.example.com:8443/deploy.git", "https://git.example.com:8443/deploy.git"},
		{"a password with '@'", "https://user:p@ss@git.example.com/deploy.git", "https://git.example.com/deploy.git"},
		{"a password with '/' (does not parse)", "https://user:pa/ss@git.example.com/deploy.git", "https://git.example.com/deploy.git"},
		{"a token alone", "https://ghp_secret@github.com/org/deploy", "https://github.com/org/deploy"},
		{"an SSH URL's user", "ssh://git@git.example.com:2222/deploy.git", "ssh://git.example.com:2222/deploy.git"},
		{"an '@' in the path of a URL without credentials stays", "https://git.example.com/org/deploy@v1.git", "https://git.example.com/org/deploy@v1.git"},
		{"no credentials, nothing changes", "https://git.example.com/deploy.git", "https://git.example.com/deploy.git"},
		{"scp-like syntax has no password to remove", "git@github.com:org/deploy.git", "git@github.com:org/deploy.git"},
	}
	for _, c := range cases {
		t.Run(c.step, func(t *testing.T) {
			if got := result.RedactURL(c.raw); got != c.want {
				t.Errorf("RedactURL(%q) = %q, want %q", c.raw, got, c.want)
			}
		})
	}
}
