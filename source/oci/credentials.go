package oci

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"oras.land/oras-go/v2/registry/remote/auth"
)

// Credentials for one registry. Every field is secret: String and GoString
// print none of them, so that a Credentials formatted by mistake leaks
// nothing.
type Credentials struct {
	// Username and Password are asked for by the registry's token server (or
	// sent as basic authentication when the registry asks for that).
	Username, Password string
	// AccessToken is sent as a bearer token (a "registry token"), answered to
	// the registry's Bearer challenge without asking its token server.
	AccessToken string
	// RefreshToken is an OAuth2 refresh token (docker config's identitytoken):
	// it is exchanged at the challenge's realm for an access token.
	RefreshToken string
	// CAFile holds PEM certificate authorities trusted besides the system's,
	// for a registry with a private CA.
	CAFile []byte
}

// IsZero reports whether c holds nothing.
func (c Credentials) IsZero() bool {
	return c.Username == "" && c.Password == "" && c.AccessToken == "" && c.RefreshToken == "" && len(c.CAFile) == 0
}

// String keeps credentials out of anything that formats them with %v or %s.
func (c Credentials) String() string { return "oci.Credentials{redacted}" }

// GoString keeps credentials out of %#v.
func (c Credentials) GoString() string { return c.String() }

// Key is a digest identifying the credentials without revealing them ("" for
// none): tokens are kept per Key, so that a caller without credentials never
// rides on a token given to one with them.
func (c Credentials) Key() string {
	if c.IsZero() {
		return ""
	}
	h := sha256.New()
	for _, field := range [][]byte{[]byte(c.Username), []byte(c.Password), []byte(c.AccessToken), []byte(c.RefreshToken), c.CAFile} {
		h.Write([]byte(strconv.Itoa(len(field)) + ":"))
		h.Write(field)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// credential is c as oras-go's auth client takes it.
func (c Credentials) credential() auth.Credential {
	return auth.Credential{Username: c.Username, Password: c.Password, RefreshToken: c.RefreshToken, AccessToken: c.AccessToken}
}

// dockerAuth is one entry of a docker config's "auths".
type dockerAuth struct {
	Auth          string `json:"auth"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// ParseDockerConfig finds registry's credentials in the data of a
// kubernetes.io/dockerconfigjson Secret (its .dockerconfigjson:
// {"auths":{"host":{"auth":base64(user:pass) | "username","password",
// "identitytoken","registrytoken"}}}). Keys may be "host", "host:port",
// "https://host", "https://host/v1/", "http://host"; Docker Hub's
// "https://index.docker.io/v1/" serves registry-1.docker.io. An "auth" wins
// over "username" and "password", as docker reads it; identitytoken is the
// RefreshToken, registrytoken the AccessToken. No entry for registry: zero
// Credentials and no error. Errors name the registry and never quote the
// Secret.
func ParseDockerConfig(data []byte, registry string) (Credentials, error) {
	var config struct {
		Auths map[string]json.RawMessage `json:"auths"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&config); err != nil || config.Auths == nil {
		return Credentials{}, errors.New(`the docker config is not the JSON of {"auths":{"host":{…}}}`)
	}
	want := dockerConfigHost(registry)
	keys := make([]string, 0, len(config.Auths))
	for key := range config.Auths {
		if dockerConfigHost(key) == want {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return Credentials{}, nil
	}
	// The key written as the registry itself first; the others in order, so
	// that the same Secret always gives the same answer.
	slices.SortFunc(keys, func(a, b string) int {
		if (a == registry) != (b == registry) {
			if a == registry {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var entry dockerAuth
	if err := json.Unmarshal(config.Auths[keys[0]], &entry); err != nil {
		return Credentials{}, fmt.Errorf("the docker config's entry for %.100s is not an object of strings (auth, username, password, identitytoken, registrytoken)", registry)
	}
	creds := Credentials{Username: entry.Username, Password: entry.Password, RefreshToken: entry.IdentityToken, AccessToken: entry.RegistryToken}
	if entry.Auth != "" {
		user, password, err := decodeAuth(entry.Auth)
		if err != nil {
			return Credentials{}, fmt.Errorf("the docker config's auth for %.100s: %w", registry, err)
		}
		creds.Username, creds.Password = user, password
	}
	return creds, nil
}

// decodeAuth reads a docker config's auth: base64 of "user:password".
func decodeAuth(auth string) (string, string, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(auth))
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(strings.TrimSpace(auth)); err != nil {
			return "", "", errors.New("it is not base64")
		}
	}
	user, password, ok := strings.Cut(string(raw), ":")
	if !ok {
		return "", "", errors.New(`it is not base64 of "user:password"`)
	}
	return user, password, nil
}

// dockerConfigHost is the registry a docker config's key (or a registry
// name) serves: its scheme and path dropped, lower-cased, Docker Hub's names
// made one.
func dockerConfigHost(key string) string {
	host := strings.ToLower(strings.TrimSpace(key))
	for _, scheme := range []string{"https://", "http://"} {
		host = strings.TrimPrefix(host, scheme)
	}
	host, _, _ = strings.Cut(host, "/")
	switch host {
	case "docker.io", "index.docker.io":
		return dockerHub
	}
	return host
}
