package oci_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"tether.dev/tether/source/oci"
)

func TestADockerConfigGivesTheRegistrysCredentials(t *testing.T) {
	basic := base64.StdEncoding.EncodeToString([]byte("reader:pa:ss"))
	cases := []struct {
		name, config, registry string
		want                   oci.Credentials
	}{
		{"a host key and auth", `{"auths":{"ghcr.io":{"auth":"` + basic + `"}}}`, "ghcr.io", oci.Credentials{Username: "reader", Password: "pa:ss"}},
		{"host:port", `{"auths":{"registry.example.com:5000":{"username":"u","password":"p"}}}`, "registry.example.com:5000", oci.Credentials{Username: "u", Password: "p"}},
		{"another port is another registry", `{"auths":{"registry.example.com:5000":{"username":"u","password":"p"}}}`, "registry.example.com", oci.Credentials{}},
		{"an https URL", `{"auths":{"https://ghcr.io":{"username":"u","password":"p"}}}`, "ghcr.io", oci.Credentials{Username: "u", Password: "p"}},
		{"an https URL with /v1/", `{"auths":{"https://quay.io/v1/":{"username":"u","password":"p"}}}`, "quay.io", oci.Credentials{Username: "u", Password: "p"}},
		{"an http URL", `{"auths":{"http://127.0.0.1:5000":{"username":"u","password":"p"}}}`, "127.0.0.1:5000", oci.Credentials{Username: "u", Password: "p"}},
		{"Docker Hub's key", `{"auths":{"https://index.docker.io/v1/":{"auth":"` + basic + `"}}}`, "registry-1.docker.io", oci.Credentials{Username: "reader", Password: "pa:ss"}},
		{"auth wins over username and password", `{"auths":{"ghcr.io":{"auth":"` + basic + `","username":"other","password":"other"}}}`, "ghcr.io", oci.Credentials{Username: "reader", Password: "pa:ss"}},
		{"identitytoken is a refresh token", `{"auths":{"myacr.azurecr.io":{"username":"00000000-0000-0000-0000-000000000000","identitytoken":"refresh-me"}}}`, "myacr.azurecr.io",
			oci.Credentials{Username: "00000000-0000-0000-0000-000000000000", RefreshToken: "refresh-me"}},
		{"registrytoken is an access token", `{"auths":{"ghcr.io":{"registrytoken":"bearer-me"}}}`, "ghcr.io", oci.Credentials{AccessToken: "bearer-me"}},
		{"the exact key first", `{"auths":{"https://ghcr.io/v1/":{"username":"a","password":"a"},"ghcr.io":{"username":"b","password":"b"}}}`, "ghcr.io", oci.Credentials{Username: "b", Password: "b"}},
		{"no entry", `{"auths":{"quay.io":{"username":"u","password":"p"}}}`, "ghcr.io", oci.Credentials{}},
		{"no auths", `{"auths":{}}`, "ghcr.io", oci.Credentials{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := oci.ParseDockerConfig([]byte(tc.config), tc.registry)
			if err != nil || got.Key() != tc.want.Key() || got.Username != tc.want.Username || got.Password != tc.want.Password ||
				got.RefreshToken != tc.want.RefreshToken || got.AccessToken != tc.want.AccessToken {
				t.Errorf("ParseDockerConfig = %q/%q refresh %q access %q (%v); want %q/%q refresh %q access %q", got.Username, got.Password,
					got.RefreshToken, got.AccessToken, err, tc.want.Username, tc.want.Password, tc.want.RefreshToken, tc.want.AccessToken)
			}
		})
	}
}

func TestAMalformedDockerConfigIsRefusedQuotingNothingOfIt(t *testing.T) {
	for name, config := range map[string]string{
		"not JSON":             `s3cret-not-json`,
		"no auths":             `{"s3cret":"x"}`,
		"auths not an object":  `{"auths":["s3cret"]}`,
		"an entry of numbers":  `{"auths":{"ghcr.io":{"auth":12345,"password":"s3cret"}}}`,
		"auth not base64":      `{"auths":{"ghcr.io":{"auth":"s3cret!!"}}}`,
		"auth without a colon": `{"auths":{"ghcr.io":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("s3cret")) + `"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := oci.ParseDockerConfig([]byte(config), "ghcr.io")
			if err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "czNjcmV0") {
				t.Errorf("ParseDockerConfig: %v; want an error quoting nothing of the Secret", err)
			}
		})
	}
}

func TestCredentialsPrintNothingAndKeyWithoutRevealing(t *testing.T) {
	creds := oci.Credentials{Username: "reader", Password: "s3cret", RefreshToken: "r3fresh"}
	for _, s := range []string{fmt.Sprint(creds), fmt.Sprintf("%+v", creds), fmt.Sprintf("%#v", creds), creds.Key()} {
		if strings.Contains(s, "s3cret") || strings.Contains(s, "r3fresh") || strings.Contains(s, "reader") {
			t.Errorf("%q reveals the credentials", s)
		}
	}
	if (oci.Credentials{}).Key() != "" || creds.Key() == "" || creds.Key() == (oci.Credentials{Username: "reader", Password: "other"}).Key() {
		t.Error(`Key: want "" for none, and one key per set of credentials`)
	}
}

func FuzzParseDockerConfig(f *testing.F) {
	f.Add([]byte(`{"auths":{"ghcr.io":{"auth":"dTpw"}}}`), "ghcr.io")
	f.Add([]byte(`{"auths":{"https://index.docker.io/v1/":{"identitytoken":"x"}}}`), "docker.io")
	f.Fuzz(func(t *testing.T, data []byte, registry string) {
		creds, err := oci.ParseDockerConfig(data, registry)
		if err != nil && !creds.IsZero() {
			t.Error("credentials returned with an error")
		}
	})
}
