package verify

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"slices"

	"github.com/ProtonMail/go-crypto/openpgp"
)

// Keys is a set of trusted keys, read from a Kubernetes Secret's data: every
// value is either armored OpenPGP public keys ("-----BEGIN PGP PUBLIC KEY
// BLOCK-----", one or many keys, one or many blocks) or SSH allowed_signers
// lines (git's gpg.ssh.allowedSignersFile format). Which one is decided by
// content, not by the data key's name. Keys are immutable once parsed and safe
// for concurrent use.
type Keys struct {
	openpgp openpgp.EntityList
	ssh     []allowedSigner
	digest  string
}

// ParseKeys reads data (a Secret's data: data key → bytes). An error is a
// *KeyError naming the data key and, for allowed_signers, the line and the
// cause, never the content; data that holds no key at all is ErrNoKeys.
//
// allowed_signers lines are `principal[,principal...] [options] keytype base64
// [comment]`; '#' comments and empty lines are ignored, and the principal list
// may be quoted ("a b",c). Options: namespaces="..." (the key is trusted only
// when the list holds "git"), valid-after and valid-before ("YYYYMMDD",
// "YYYYMMDDHHMM[SS]", an optional trailing "Z"; UTC either way), checked
// against the object's committer or tagger time. cert-authority is refused
// (certificates are not supported), and so is any other option.
func ParseKeys(data map[string][]byte) (*Keys, error) {
	k := &Keys{}
	var trusted [][]byte
	for _, entry := range slices.Sorted(maps.Keys(data)) {
		value := data[entry]
		if isOpenPGP(value) {
			entities, blocks, err := readOpenPGP(entry, value)
			if err != nil {
				return nil, err
			}
			k.openpgp = append(k.openpgp, entities...)
			trusted = append(trusted, blocks...)
			continue
		}
		signers, err := readAllowedSigners(entry, value)
		if err != nil {
			return nil, err
		}
		for _, s := range signers {
			k.ssh = append(k.ssh, s)
			trusted = append(trusted, s.canonical())
		}
	}
	if len(trusted) == 0 {
		return nil, ErrNoKeys
	}
	k.digest = digest(trusted)
	return k, nil
}

// Digest is a stable hex SHA-256 of what the keys trust: the OpenPGP key
// packets and the allowed_signers lines as parsed, whatever their order, the
// data keys' names, the armor's headers or the comments. Callers cache a
// verdict per (object, Digest).
func (k *Keys) Digest() string {
	if k == nil {
		return ""
	}
	return k.digest
}

// digest hashes the canonical forms of the trusted keys in sorted order, each
// prefixed with its length so that no two sets share a hash input.
func digest(trusted [][]byte) string {
	sorted := slices.Clone(trusted)
	slices.SortFunc(sorted, bytes.Compare)
	h := sha256.New()
	var n [8]byte
	for _, t := range sorted {
		binary.BigEndian.PutUint64(n[:], uint64(len(t)))
		h.Write(n[:])
		h.Write(t)
	}
	return hex.EncodeToString(h.Sum(nil))
}
