package result

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// RedactURL removes credentials written into a URL ("https://user:token@host/..."),
// so that the URL can go into messages, logs and metric labels. The rule does not
// depend on the URL parsing, since a password holding '%', '#' or a space makes
// net/url refuse it: whatever lies between "://" and the last '@' before the
// first '/' after it is userinfo, and goes. A URL that does not parse and holds
// an '@' after the first '/' (a password with a '/' in it) loses everything up to
// its last '@': a broken URL is better shown short than with a secret in it.
func RedactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw // scp-like "git@host:path" carries a user name, never a password
	}
	authority, _, _ := strings.Cut(rest, "/")
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		return scheme + "://" + rest[at+1:]
	}
	if _, err := url.Parse(raw); err != nil {
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			return scheme + "://" + rest[at+1:]
		}
	}
	return raw
}

// NormalizeURL reduces a repository URL to the form in which two spellings of one
// repository compare equal: "host/path", lower case, without scheme, user, port or
// a trailing ".git" or "/". So https://GitHub.com/Org/App.git,
// ssh://git@github.com:22/org/app and git@github.com:org/app all become
// "github.com/org/app". It returns "" for what is not a URL.
//
// Ignoring case, scheme and port may make two different repositories compare
// equal on an unusual host; what is at stake is only which Syncs look at their
// repository at once (one extra ref listing), never what is applied.
func NormalizeURL(raw string) string {
	raw = strings.TrimSpace(raw)
	var host, p string
	if i := strings.Index(raw, "://"); i > 0 {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme == "" || (u.Host == "" && u.Scheme != "file") {
			return ""
		}
		host, p = u.Hostname(), u.Path
	} else if m := scpLike.MatchString(raw); m {
		at := strings.Index(raw, "@")
		host, p, _ = strings.Cut(raw[at+1:], ":")
	} else {
		return ""
	}
	p = strings.Trim(p, "/")
	for {
		trimmed := strings.TrimSuffix(strings.TrimSuffix(p, ".git"), "/")
		if trimmed == p {
			break
		}
		p = trimmed
	}
	if p == "" {
		return ""
	}
	return strings.ToLower(host + "/" + p)
}

// scpLike matches git's scp-like SSH syntax, "user@host:path", as the API does.
var scpLike = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:.+$`)

// IsSCPLike reports whether raw is in git's scp-like SSH syntax, "user@host:path".
func IsSCPLike(raw string) bool { return scpLike.MatchString(raw) }

// checkUserinfo refuses a URL that carries credentials (by RedactURL's rule)
// but does not parse: git or net/http would quote it whole in their errors. The
// message does not quote it either, not even redacted: what does not parse may
// hide more of the secret than the rule finds.
func CheckUserinfo(raw string) error {
	if RedactURL(raw) == raw {
		return nil
	}
	if _, err := url.Parse(raw); err != nil {
		return errors.New("the URL holds credentials but is not a valid URL: percent-encode the user name and " +
			"password ('%' as %25, '#' as %23, '/' as %2F, a space as %20), or give them in spec.source.secretRef")
	}
	return nil
}
