package sops

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"filippo.io/age"
	"github.com/ProtonMail/go-crypto/openpgp"
)

// Decryption is how a render decrypts the SOPS files it reads: with the keys of
// one Sync, and nothing else (never the agent's environment, files or keyrings).
// A nil *Decryption decrypts nothing: SOPS files are then read as they are.
type Decryption struct {
	// Keys are the Sync's private keys.
	Keys *Keys
	// RequireEncryption fails the render when it reads a Secret that is not
	// encrypted with SOPS (v1alpha1.ReasonUnencryptedSecret).
	RequireEncryption bool
}

// Digest identifies d in a render cache key: the keys' digest and the policy.
func (d *Decryption) Digest() string {
	if d == nil {
		return ""
	}
	policy := "0"
	if d.RequireEncryption {
		policy = "1"
	}
	return d.Keys.Digest() + policy
}

// Keys are the private keys that decrypt one Sync's SOPS files: age identities
// and OpenPGP private keys. They are held in memory only.
type Keys struct {
	// raw are the entries the keys were parsed from, which a render worker
	// parses again.
	raw    map[string][]byte
	age    []age.Identity
	pgp    openpgp.EntityList
	digest string
}

// Names of the entries of a keys Secret that hold keys; other entries are
// left alone.
const (
	AgeKeySuffix = ".agekey"
	PGPKeySuffix = ".asc"
)

// ErrNoKeys is returned by ParseKeys for entries that hold no key.
var ErrNoKeys = errors.New("holds no key: name entries *" + AgeKeySuffix + " (age identities) or *" + PGPKeySuffix + " (armored OpenPGP private keys)")

// ParseKeys reads the keys of a keys Secret's data: every entry named *.agekey
// holds age identities (AGE-SECRET-KEY-1…, one a line, # comments allowed),
// every entry named *.asc an armored OpenPGP private key (without a
// passphrase). Errors name the entry, never its content.
func ParseKeys(data map[string][]byte) (*Keys, error) {
	k := &Keys{raw: map[string][]byte{}}
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(data)) {
		value := data[name]
		switch {
		case strings.HasSuffix(name, AgeKeySuffix):
			ids, err := age.ParseIdentities(bytes.NewReader(value))
			if err != nil {
				return nil, fmt.Errorf("entry %s: not age identities (%s)", name, ageParseCause(err))
			}
			k.age = append(k.age, ids...)
		case strings.HasSuffix(name, PGPKeySuffix):
			entities, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(value))
			if err != nil {
				return nil, fmt.Errorf("entry %s: not an armored OpenPGP key", name)
			}
			if err := checkPrivate(entities); err != nil {
				return nil, fmt.Errorf("entry %s: %w", name, err)
			}
			k.pgp = append(k.pgp, entities...)
		default:
			continue
		}
		k.raw[name] = value
		fmt.Fprintf(h, "%d:%s%d:", len(name), name, len(value))
		h.Write(value)
	}
	if len(k.age) == 0 && len(k.pgp) == 0 {
		return nil, ErrNoKeys
	}
	k.digest = hex.EncodeToString(h.Sum(nil))
	return k, nil
}

// ageParseCause says why age identities did not parse without quoting them:
// age's own errors may hold a part of the line they could not read.
func ageParseCause(err error) string {
	if strings.Contains(err.Error(), "no secret keys") {
		return "no AGE-SECRET-KEY-1 line"
	}
	return "a line is no AGE-SECRET-KEY-1 identity"
}

// checkPrivate refuses OpenPGP keys that cannot decrypt: public keys only, or
// private keys locked with a passphrase, which the agent has no way to ask for.
func checkPrivate(entities openpgp.EntityList) error {
	for _, e := range entities {
		if e.PrivateKey == nil {
			return errors.New("an OpenPGP public key, not a private key")
		}
		if e.PrivateKey.Encrypted {
			return errors.New("an OpenPGP private key locked with a passphrase; export it without one")
		}
		for _, sub := range e.Subkeys {
			if sub.PrivateKey != nil && sub.PrivateKey.Encrypted {
				return errors.New("an OpenPGP private subkey locked with a passphrase; export it without one")
			}
		}
	}
	return nil
}

// Entries are the entries of the keys Secret the keys were parsed from, which a
// render worker parses again (ParseKeys). They are the keys themselves: the
// caller hands them on to a worker and to nothing else.
func (k *Keys) Entries() map[string][]byte { return k.raw }

// Digest identifies the keys (a SHA-256 of the entries read), so that renders
// with other keys are cached apart and a rotation renders again.
func (k *Keys) Digest() string {
	if k == nil {
		return ""
	}
	return k.digest
}
