package ociregistry_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"tether.dev/tether/test/ociregistry"
)

// get GETs path of the proxy in front of reg, with a bearer token if any.
func get(t *testing.T, reg *ociregistry.Server, path, token string) (*http.Response, string) {
	t.Helper()
	base := "http://" + strings.TrimPrefix(strings.TrimSuffix(reg.Repository, "/charts"), "oci://")
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestAPushedChartIsListedAndCountedAndATokenIsRequiredWhenAsked(t *testing.T) {
	reg := ociregistry.Start(t)
	reg.Push(t, "web", "1.0.0+build.1", []byte("not really a chart"))
	resp, body := get(t, reg, "/v2/charts/web/tags/list", "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"1.0.0_build.1"`) {
		t.Fatalf("tag list: %s %s; want the tag 1.0.0_build.1", resp.Status, body)
	}
	if n := reg.Requests("tags"); n != 1 {
		t.Errorf("%d tag list requests counted; want 1 (pushes go straight to the registry)", n)
	}

	reg.RequireToken("reader", "pw")
	resp, body = get(t, reg, "/v2/charts/web/tags/list", "")
	challenge := resp.Header.Get("WWW-Authenticate")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, ociregistry.RefusalBody) ||
		!strings.HasPrefix(challenge, `Bearer realm="http://`) || !strings.Contains(challenge, `scope="repository:charts/web:pull"`) {
		t.Fatalf("without a token: %s %q %s; want 401 with a Bearer challenge and the refusal body", resp.Status, challenge, body)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, strings.Split(challenge, `"`)[1]+"?scope=x", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("reader", "pw")
	tresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tresp.Body.Close() }()
	var answer struct{ Token string }
	if err := json.NewDecoder(tresp.Body).Decode(&answer); err != nil || answer.Token == "" {
		t.Fatalf("token endpoint: %s (%v)", tresp.Status, err)
	}
	if resp, body = get(t, reg, "/v2/charts/web/tags/list", answer.Token); resp.StatusCode != http.StatusOK {
		t.Errorf("with the token: %s %s; want 200", resp.Status, body)
	}
}
