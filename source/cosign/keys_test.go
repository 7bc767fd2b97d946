package cosign

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
)

func TestParseKeys(t *testing.T) {
	ci := newECDSAKey(t, elliptic.P256())
	release := newEd25519Key(t)

	t.Run("reads ECDSA, ed25519 and RSA keys, named by their data keys", func(t *testing.T) {
		rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		p384 := newECDSAKey(t, elliptic.P384())
		keys, err := ParseKeys(map[string][]byte{
			"ci.pub": ci.public, "release.pub": release.public, "rsa.pub": publicPEM(t, rsaKey.Public()), "p384.pub": p384.public,
		})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, k := range keys.keys {
			names = append(names, k.signer.Key)
			if !strings.HasPrefix(k.signer.Fingerprint, "SHA256:") || len(k.signer.Fingerprint) != len("SHA256:")+43 {
				t.Errorf("%s: fingerprint %q", k.signer.Key, k.signer.Fingerprint)
			}
		}
		if got := strings.Join(names, " "); got != "ci.pub p384.pub release.pub rsa.pub" {
			t.Errorf("keys %s, want them in the data keys' order", got)
		}
		if n := len(keys.keys[1].verifiers); n != 2 {
			t.Errorf("a P-384 key has %d verifiers, want SHA-256 and SHA-384", n)
		}
	})
	t.Run("Digest changes with the keys and their names, not with PEM layout", func(t *testing.T) {
		a := mustKeys(t, map[string]testKey{"ci.pub": ci})
		crlf := []byte(strings.ReplaceAll(string(ci.public), "\n", "\r\n"))
		b, err := ParseKeys(map[string][]byte{"ci.pub": append([]byte("\n"), crlf...)})
		if err != nil {
			t.Fatal(err)
		}
		if a.Digest() != b.Digest() || len(a.Digest()) != 64 {
			t.Errorf("digests %s and %s of one key differ", a.Digest(), b.Digest())
		}
		for _, other := range []*Keys{
			mustKeys(t, map[string]testKey{"renamed.pub": ci}),
			mustKeys(t, map[string]testKey{"ci.pub": release}),
			mustKeys(t, map[string]testKey{"ci.pub": ci, "release.pub": release}),
		} {
			if other.Digest() == a.Digest() {
				t.Errorf("keys %v share the digest of ci.pub alone", other.keys)
			}
		}
		if (*Keys)(nil).Digest() != "" {
			t.Error("nil keys have a digest")
		}
	})
}

func TestParseKeysErrors(t *testing.T) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	privatePEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER})
	good := newECDSAKey(t, elliptic.P256()).public
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		value []byte
		err   error
		says  string
	}{
		{name: "a private key", value: privatePEM, err: errPrivateKey},
		{name: "cosign's encrypted private key", value: pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED SIGSTORE PRIVATE KEY", Bytes: []byte("secret-bytes")}), err: errPrivateKey},
		{name: "garbage", value: []byte("secret-bytes \x1b]0;pwned\x07"), err: errNotPEM},
		{name: "nothing", value: []byte(" \n"), err: errEmpty},
		{name: "a certificate", value: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("secret-bytes")}), err: errKeyType},
		{name: "a corrupt public key", value: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte("secret-bytes")}), err: errKeyType},
		{name: "two keys", value: append(append([]byte{}, good...), good...), err: errManyBlocks},
		{name: "a weak RSA key", value: publicPEM(t, weak.Public()), says: "is not a key cosign trusts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseKeys(map[string][]byte{"good.pub": good, "team/key\n": tt.value})
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Entry != "team/key\n" {
				t.Fatalf("ParseKeys = %v, want a *KeyError of the entry", err)
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("ParseKeys = %v, want %v", err, tt.err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, `entry "team/key\n": `) || !strings.Contains(msg, tt.says) {
				t.Errorf("message %q", msg)
			}
			if strings.Contains(msg, "secret-bytes") || strings.Contains(msg, "pwned") || strings.Contains(msg, "MII") {
				t.Errorf("message %q quotes the entry", msg)
			}
		})
	}
	t.Run("no entry", func(t *testing.T) {
		if _, err := ParseKeys(nil); !errors.Is(err, ErrNoKeys) {
			t.Errorf("ParseKeys(nil) = %v, want ErrNoKeys", err)
		}
	})
}
