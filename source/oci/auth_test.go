package oci_test

import (
	"encoding/base64"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/oci"
	"tether.dev/tether/test/ociregistry"
)

func TestATokenProtectedRegistryIsReadWithItsCredentials(t *testing.T) {
	reg := ociregistry.Start(t)
	c := newClient(t, oci.Options{})
	repo := repository(t, reg, "webapp")
	pushImage(t, c, repo, ociregistry.ConfigType, nil, []ocispec.Descriptor{pushLayer(t, c, repo, ociregistry.ChartLayerType, []byte("a chart"))}, "1.0.0")
	reg.RequireToken("reader", "s3cret-password")
	reg.AcceptRefreshToken("s3cret-refresh")

	t.Run("a username and password", func(t *testing.T) {
		creds := oci.Credentials{Username: "reader", Password: "s3cret-password"}
		if _, err := c.Tags(t.Context(), repo, creds); err != nil {
			t.Fatalf("Tags: %v", err)
		}
		tokens := reg.Requests("token")
		m, err := c.Manifest(t.Context(), repo, creds, "1.0.0")
		if err != nil {
			t.Fatalf("Manifest: %v", err)
		}
		if _, err := c.Blob(t.Context(), repo, creds, m.Layers[0], 1<<20); err != nil {
			t.Fatalf("Blob: %v", err)
		}
		if n := reg.Requests("token") - tokens; n != 0 {
			t.Errorf("the token server was asked %d more times; want none (the repository's pull token is kept)", n)
		}
	})
	t.Run("a docker config Secret", func(t *testing.T) {
		host := repo.Registry
		auth := base64.StdEncoding.EncodeToString([]byte("reader:s3cret-password"))
		for name, config := range map[string]string{
			"auth":          `{"auths":{"http://` + host + `":{"auth":"` + auth + `"}}}`,
			"identitytoken": `{"auths":{"` + host + `":{"username":"<token>","identitytoken":"s3cret-refresh"}}}`,
		} {
			creds, err := oci.ParseDockerConfig([]byte(config), host)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if tags, err := c.Tags(t.Context(), repo, creds); err != nil || len(tags) != 1 {
				t.Errorf("%s: Tags = %v (%v); want the one tag", name, tags, err)
			}
		}
	})
	t.Run("an access token", func(t *testing.T) {
		token := reg.Token()
		if tags, err := c.Tags(t.Context(), repo, oci.Credentials{AccessToken: token}); err != nil || len(tags) != 1 {
			t.Errorf("Tags = %v (%v); want the one tag", tags, err)
		}
	})
	t.Run("no or wrong credentials, refused without quoting them or the answer", func(t *testing.T) {
		for _, creds := range []oci.Credentials{{}, {Username: "reader", Password: "wrong-password"}, {RefreshToken: "wrong-refresh"}} {
			_, err := c.Tags(t.Context(), repo, creds)
			checkFailure(t, err, v1alpha1.ReasonAuthenticationFailed, "reading the tag list of charts/webapp: HTTP 401 Unauthorized")
			if err != nil && (strings.Contains(err.Error(), "password") || strings.Contains(err.Error(), "refresh") || strings.Contains(err.Error(), "registry-refusal") || strings.Contains(err.Error(), "?")) {
				t.Errorf("error %q quotes a credential, the answer or a URL's query", err)
			}
		}
	})
}
