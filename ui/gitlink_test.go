package ui

import (
	"strings"
	"testing"
)

func TestTheGitLinkIsTheDirectoryAtTheAppliedCommit(t *testing.T) {
	const c = "4f2c1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b"
	for _, tc := range []struct {
		name, repo, commit, dir, want string
	}{
		{"GitHub over https", "https://github.com/acme/shop.git", c, "apps/web", "https://github.com/acme/shop/tree/" + c + "/apps/web"},
		{"GitHub without .git, a trailing slash", "https://github.com/acme/shop/", c, "apps/web/", "https://github.com/acme/shop/tree/" + c + "/apps/web"},
		{"GitHub over ssh", "ssh://git@github.com/acme/shop.git", c, "./apps/web", "https://github.com/acme/shop/tree/" + c + "/apps/web"},
		{"GitHub in git's short form", "git@github.com:acme/shop.git", c, ".", "https://github.com/acme/shop/tree/" + c},
		{"GitHub, a token in the URL left out", "https://x-access-token:ghp_s3cret@github.com/acme/shop.git", c, "web", "https://github.com/acme/shop/tree/" + c + "/web"},
		{"GitLab with subgroups", "https://gitlab.com/acme/platform/shop.git", c, "web", "https://gitlab.com/acme/platform/shop/-/tree/" + c + "/web"},
		{"GitLab self-hosted, port kept over https", "https://oauth2:glpat-s3cret@gitlab.example.com:8443/acme/shop.git", c, "web", "https://gitlab.example.com:8443/acme/shop/-/tree/" + c + "/web"},
		{"GitLab self-hosted over ssh, its port not the web's", "ssh://git@gitlab.example.com:2222/acme/shop.git", c, "web", "https://gitlab.example.com/acme/shop/-/tree/" + c + "/web"},
		{"Bitbucket", "https://jo@bitbucket.org/acme/shop.git", c, "web", "https://bitbucket.org/acme/shop/src/" + c + "/web"},
		{"Codeberg", "git@codeberg.org:acme/shop.git", c, "web", "https://codeberg.org/acme/shop/src/commit/" + c + "/web"},
		{"Gitea self-hosted over http", "http://gitea.lan/acme/shop.git", c, "web", "http://gitea.lan/acme/shop/src/commit/" + c + "/web"},
		{"a directory's name escaped", "https://github.com/acme/shop", c, "a b/c?d#e", "https://github.com/acme/shop/tree/" + c + "/a%20b/c%3Fd%23e"},
		{"a path climbing out is cleaned", "https://github.com/acme/shop", c, "../../etc", "https://github.com/acme/shop/tree/" + c + "/etc"},
		{"a SHA-256 commit", "https://github.com/acme/shop", strings.Repeat("ab", 32), "web", "https://github.com/acme/shop/tree/" + strings.Repeat("ab", 32) + "/web"},
		{"an unknown host", "https://git.example.com/acme/shop.git", c, "web", ""},
		{"a file URL", "file:///srv/git/shop.git", c, "web", ""},
		{"no commit applied yet", "https://github.com/acme/shop", "", "web", ""},
		{"a branch, not a commit", "https://github.com/acme/shop", "main", "web", ""},
		{"GitHub with too many segments", "https://github.com/acme/shop/extra", c, "web", ""},
		{"GitHub with one segment", "https://github.com/acme", c, "web", ""},
		{"a chart or OCI Sync has no URL", "", c, "web", ""},
		{"a host made to look like GitHub", "https://github.com.evil.example/acme/shop", c, "web", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := gitWebURL(tc.repo, tc.commit, tc.dir)
			if got != tc.want {
				t.Errorf("gitWebURL(%q, %q, %q) = %q, want %q", tc.repo, tc.commit, tc.dir, got, tc.want)
			}
			for _, secret := range []string{"s3cret", "jo@", "x-access-token", "oauth2"} {
				if strings.Contains(got, secret) {
					t.Errorf("the link %q holds the URL's credentials (%q)", got, secret)
				}
			}
		})
	}
}
