package cosign

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/options"
)

// Keys are the public keys whose cosign signatures are trusted, read from a
// Kubernetes Secret's data: each value is one PEM public key as `cosign
// generate-key-pair` writes cosign.pub (ECDSA P-256 by default; ECDSA P-384
// and P-521, ed25519 and RSA of 2048 to 4096 bits are read too), and each data
// key names its key in Signer. Keys are immutable once parsed and safe for
// concurrent use.
type Keys struct {
	keys   []trustedKey // in the data keys' order
	digest string
}

// trustedKey is one entry of the Secret.
type trustedKey struct {
	signer Signer
	// verifiers check a signature over a message. The first hashes with
	// SHA-256, as cosign v2 signs with any key; an ECDSA P-384 or P-521 key
	// has a second that hashes as the curve wants (SHA-384, SHA-512), as
	// cosign v3 signs bundles with such keys.
	verifiers []signature.Verifier
}

// ParseKeys reads data (a Secret's data: data key → bytes). Every entry must
// be one public key: a private key (cosign.key, which has no place in the
// cluster), a certificate, garbage or a weak key (goodkey's policy, as
// cosign's) is refused. An error is a *KeyError naming the data key and the
// cause, never the content; data with no entry is ErrNoKeys.
func ParseKeys(data map[string][]byte) (*Keys, error) {
	k := &Keys{}
	for _, entry := range slices.Sorted(maps.Keys(data)) {
		key, err := parseKey(entry, data[entry])
		if err != nil {
			return nil, &KeyError{Entry: entry, Err: err}
		}
		k.keys = append(k.keys, key)
	}
	if len(k.keys) == 0 {
		return nil, ErrNoKeys
	}
	k.digest = keysDigest(k.keys)
	return k, nil
}

// Digest is a stable hex SHA-256 of what the keys trust and what they are
// called: each key's DER and its data key, whatever the PEM's headers or
// layout. Callers cache a verdict per (artifact digest, Digest); a renamed
// key changes it, since a verdict names the key.
func (k *Keys) Digest() string {
	if k == nil {
		return ""
	}
	return k.digest
}

// The reasons an entry is refused. None quotes the entry.
var (
	errEmpty       = errors.New("is empty")
	errNotPEM      = errors.New("is not a PEM public key (cosign.pub)")
	errPrivateKey  = errors.New("holds a private key: give its public key (cosign.pub), and keep the private key out of the cluster")
	errManyBlocks  = errors.New("holds more than one PEM block: give one public key per entry")
	errKeyType     = errors.New("is not a public key of a type cosign verifies with (a PEM \"PUBLIC KEY\" of ECDSA, ed25519 or RSA)")
	errUnsupported = errors.New("is a public key of a type cosign does not sign with")
)

func parseKey(entry string, value []byte) (trustedKey, error) {
	if len(bytes.TrimSpace(value)) == 0 {
		return trustedKey{}, errEmpty
	}
	block, rest := pem.Decode(value)
	if block == nil {
		return trustedKey{}, errNotPEM
	}
	if strings.Contains(block.Type, "PRIVATE KEY") {
		return trustedKey{}, errPrivateKey
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return trustedKey{}, errManyBlocks
	}
	// UnmarshalPEMToPublicKey quotes the PEM type it does not know: its
	// error is not passed on.
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(value)
	if err != nil {
		return trustedKey{}, errKeyType
	}
	if err := cryptoutils.ValidatePubKey(pub); err != nil {
		return trustedKey{}, fmt.Errorf("is not a key cosign trusts: %w", err)
	}
	der, err := cryptoutils.MarshalPublicKeyToDER(pub)
	if err != nil {
		return trustedKey{}, errUnsupported
	}
	verifiers, err := loadVerifiers(pub)
	if err != nil {
		return trustedKey{}, errUnsupported
	}
	return trustedKey{signer: Signer{Key: entry, Fingerprint: fingerprint(der)}, verifiers: verifiers}, nil
}

// loadVerifiers makes the key's verifiers: SHA-256 for every key, and the
// curve's own hash for ECDSA P-384 and P-521 keys.
func loadVerifiers(pub crypto.PublicKey) ([]signature.Verifier, error) {
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, err
	}
	verifiers := []signature.Verifier{v}
	if ec, ok := pub.(*ecdsa.PublicKey); ok && ec.Curve != elliptic.P256() {
		def, err := signature.LoadDefaultVerifier(pub)
		if err != nil {
			return nil, err
		}
		verifiers = append(verifiers, def)
	}
	return verifiers, nil
}

// fingerprint is the SHA-256 of a key's DER as ssh-keygen -l shows
// fingerprints: "SHA256:" and unpadded base64.
func fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// verify returns the first key whose verifier accepts sig over message.
func (k *Keys) verify(sig, message []byte) (Signer, bool) {
	for _, key := range k.keys {
		for _, v := range key.verifiers {
			if v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(message)) == nil {
				return key.signer, true
			}
		}
	}
	return Signer{}, false
}

// verifyDigest returns the first key that accepts sig over a message known
// by its SHA-256 digest only (a Sigstore bundle's message signature). An
// ed25519 key cannot: pure ed25519 signs the message itself.
func (k *Keys) verifyDigest(sig, sha256Digest []byte) (Signer, bool) {
	for _, key := range k.keys {
		err := key.verifiers[0].VerifySignature(bytes.NewReader(sig), nil, options.WithDigest(sha256Digest))
		if err == nil {
			return key.signer, true
		}
	}
	return Signer{}, false
}

// keysDigest hashes each key's data key and fingerprint in sorted order,
// each prefixed with its length so that no two sets share a hash input.
func keysDigest(keys []trustedKey) string {
	h := sha256.New()
	var n [8]byte
	for _, key := range keys {
		for _, s := range []string{key.signer.Key, key.signer.Fingerprint} {
			binary.BigEndian.PutUint64(n[:], uint64(len(s)))
			h.Write(n[:])
			h.Write([]byte(s))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
