package chartrepo

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxOCITokenBytes bounds a token server's answer.
const maxOCITokenBytes = 64 << 10

// ociToken is a registry's token for one scope, with when it expires.
type ociToken struct {
	token   string
	expires time.Time
}

// ociDo sends r to a registry with req's credentials as the registry asks
// for them (the distribution spec's token flow): a cached token for r's
// scope first; on a 401 with a Bearer challenge, a token from the
// challenge's realm (asked with req's username and password, if any), then
// r again; on a Basic challenge, r again with the username and password. A
// BearerToken in req is sent as it is. An answer outside 2xx is returned
// for the caller to report by its status (the token server's, when it
// refused).
func (rs *Repositories) ociDo(client *http.Client, r *http.Request, req Request) (*http.Response, error) {
	if req.Auth.BearerToken != "" {
		r.Header.Set("Authorization", "Bearer "+req.Auth.BearerToken)
		return client.Do(r)
	}
	scope := ociScope(r.URL.Path)
	tokenKey := r.URL.Host + "\x00" + scope + "\x00" + req.Auth.Key()
	if tok, ok := rs.charts.token(tokenKey, rs.now()); ok {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := client.Do(r)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	scheme, params := parseChallenge(resp.Header.Get("WWW-Authenticate"))
	hasCredentials := req.Auth.Username != "" || req.Auth.Password != ""
	switch {
	case scheme == "basic" && hasCredentials && r.Header.Get("Authorization") == "":
		_ = resp.Body.Close()
		again := r.Clone(r.Context())
		again.SetBasicAuth(req.Auth.Username, req.Auth.Password)
		return client.Do(again)
	case scheme == "bearer":
		_ = resp.Body.Close()
		if params["scope"] != "" {
			scope = params["scope"]
		}
		tok, refused, err := rs.fetchOCIToken(client, r, params["realm"], params["service"], scope, req)
		if err != nil || refused != nil {
			return refused, err
		}
		rs.charts.keepToken(tokenKey, tok)
		again := r.Clone(r.Context())
		again.Header.Set("Authorization", "Bearer "+tok.token)
		return client.Do(again)
	}
	return resp, nil
}

// fetchOCIToken asks realm for a token of scope, with req's username and
// password when it has them. realm must be HTTPS, or HTTP when the registry
// is spoken to over HTTP. A refusal is returned as the token server's
// answer (refused), reported by its status.
func (rs *Repositories) fetchOCIToken(client *http.Client, r *http.Request, realm, service, scope string, req Request) (ociToken, *http.Response, error) {
	u, err := url.Parse(realm)
	if err != nil || u.Host == "" || (u.Scheme != "https" && (u.Scheme != "http" || r.URL.Scheme != "http")) {
		return ociToken{}, nil, errors.New("the registry's challenge names no usable token server (an https:// realm)")
	}
	q := u.Query()
	if service != "" {
		q.Set("service", service)
	}
	q.Set("scope", scope)
	u.RawQuery = q.Encode()
	treq, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		return ociToken{}, nil, err
	}
	if req.Auth.Username != "" || req.Auth.Password != "" {
		treq.SetBasicAuth(req.Auth.Username, req.Auth.Password)
	}
	resp, err := client.Do(treq)
	if err != nil {
		return ociToken{}, nil, fmt.Errorf("asking the registry's token server: %w", withoutURL(err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return ociToken{}, resp, nil
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxOCITokenBytes+1))
	if err != nil {
		return ociToken{}, nil, fmt.Errorf("reading the registry's token: %w", withoutURL(err))
	}
	if len(data) > maxOCITokenBytes {
		return ociToken{}, nil, fmt.Errorf("the registry's token answer is over %d bytes", maxOCITokenBytes)
	}
	var answer struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if err := json.Unmarshal(data, &answer); err != nil || (answer.Token == "" && answer.AccessToken == "") {
		return ociToken{}, nil, errors.New("the registry's token server answered no token")
	}
	tok := ociToken{token: answer.Token}
	if tok.token == "" {
		tok.token = answer.AccessToken
	}
	// The spec's default lifetime is 60 s; a token is dropped 10 s early.
	life := 60 * time.Second
	if answer.ExpiresIn > 0 {
		life = time.Duration(answer.ExpiresIn) * time.Second
	}
	tok.expires = rs.now().Add(life - 10*time.Second)
	return tok, nil, nil
}

// ociScope is the pull scope of a request path /v2/<repo>/{tags,manifests,blobs}/….
func ociScope(path string) string {
	repo := strings.TrimPrefix(path, "/v2/")
	for _, kind := range []string{"/tags/", "/manifests/", "/blobs/"} {
		if i := strings.LastIndex(repo, kind); i >= 0 {
			repo = repo[:i]
			break
		}
	}
	return "repository:" + repo + ":pull"
}

// parseChallenge reads a WWW-Authenticate header: its scheme, lower-cased,
// and its parameters (realm="…",service="…",scope="…").
func parseChallenge(header string) (string, map[string]string) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(header), " ")
	params := map[string]string{}
	for rest = strings.TrimSpace(rest); rest != ""; {
		name, after, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		name = strings.ToLower(strings.TrimSpace(name))
		var value string
		value, rest = challengeValue(after)
		params[name] = value
		rest = strings.TrimLeft(rest, ", ")
	}
	return strings.ToLower(scheme), params
}

// challengeValue reads one parameter value (quoted or not) from the start of
// s, returning it and what follows.
func challengeValue(s string) (string, string) {
	if !strings.HasPrefix(s, `"`) {
		value, rest, _ := strings.Cut(s, ",")
		return strings.TrimSpace(value), rest
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case '"':
			return b.String(), s[i+1:]
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), ""
}

// token returns the token kept under key, unless it expired.
func (c *chartRepos) token(key string, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tok, ok := c.tokens[key]
	if !ok || now.After(tok.expires) {
		delete(c.tokens, key)
		return "", false
	}
	return tok.token, true
}

// keepToken keeps tok under key; at most maxOCITokens are kept.
func (c *chartRepos) keepToken(key string, tok ociToken) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.tokens) >= maxOCITokens {
		clear(c.tokens)
	}
	c.tokens[key] = tok
}

// maxOCITokens bounds the tokens kept (one per registry, scope and credentials).
const maxOCITokens = 1024
