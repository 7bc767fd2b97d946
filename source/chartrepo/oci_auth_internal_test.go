package chartrepo

import (
	"maps"
	"testing"
)

func TestAChallengeIsReadWithItsQuotedParameters(t *testing.T) {
	for header, want := range map[string]struct {
		scheme string
		params map[string]string
	}{
		`Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:charts/web:pull,push"`: {
			"bearer", map[string]string{"realm": "https://auth.example.com/token", "service": "registry.example.com", "scope": "repository:charts/web:pull,push"},
		},
		`Basic realm="Registry Realm"`:             {"basic", map[string]string{"realm": "Registry Realm"}},
		`bearer realm=https://a/t, service="s\"q"`: {"bearer", map[string]string{"realm": "https://a/t", "service": `s"q`}},
		`Bearer`:                     {"bearer", map[string]string{}},
		`Bearer realm="unterminated`: {"bearer", map[string]string{"realm": "unterminated"}},
	} {
		scheme, params := parseChallenge(header)
		if scheme != want.scheme || !maps.Equal(params, want.params) {
			t.Errorf("parseChallenge(%s) = %s %v; want %s %v", header, scheme, params, want.scheme, want.params)
		}
	}
}

func TestTheScopeOfARequestIsItsRepositorysPull(t *testing.T) {
	for path, want := range map[string]string{
		"/v2/charts/web/tags/list":               "repository:charts/web:pull",
		"/v2/a/b/c/manifests/1.0.0":              "repository:a/b/c:pull",
		"/v2/charts/blobs/blobs/sha256:0123abcd": "repository:charts/blobs:pull",
	} {
		if got := ociScope(path); got != want {
			t.Errorf("ociScope(%s) = %s; want %s", path, got, want)
		}
	}
}
