package sops

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"filippo.io/age"
	agearmor "filippo.io/age/armor"
	"github.com/ProtonMail/go-crypto/openpgp"
	pgparmor "github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
)

// maxDataKey bounds what one master key may decrypt to: a SOPS data key is 32
// bytes, and a hostile file must not make the agent decrypt more.
const maxDataKey = 1024

// errNoMatchingKey is the failure of a master key none of the Sync's keys opens.
var errNoMatchingKey = errors.New("none of the Sync's keys opens it")

// openAge decrypts an armored age message with the Sync's age identities.
func (k *Keys) openAge(ciphertext []byte) ([]byte, error) {
	if k == nil || len(k.age) == 0 {
		return nil, errNoMatchingKey
	}
	r, err := age.Decrypt(agearmor.NewReader(bytes.NewReader(ciphertext)), k.age...)
	var noMatch *age.NoIdentityMatchError
	if errors.As(err, &noMatch) {
		return nil, errNoMatchingKey
	}
	if err != nil {
		return nil, fmt.Errorf("age: %w", err)
	}
	return readBounded(r)
}

// openPGP decrypts an armored OpenPGP message with the Sync's OpenPGP keys.
func (k *Keys) openPGP(ciphertext []byte) ([]byte, error) {
	if k == nil || len(k.pgp) == 0 {
		return nil, errNoMatchingKey
	}
	block, err := pgparmor.Decode(bytes.NewReader(ciphertext))
	if err != nil {
		return nil, fmt.Errorf("openpgp: %w", err)
	}
	md, err := openpgp.ReadMessage(block.Body, k.pgp, nil, nil)
	if err != nil {
		if errors.Is(err, pgperrors.ErrKeyIncorrect) {
			return nil, errNoMatchingKey
		}
		return nil, fmt.Errorf("openpgp: %w", err)
	}
	return readBounded(md.UnverifiedBody)
}

// readBounded reads a data key, refusing one over maxDataKey bytes.
func readBounded(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxDataKey+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxDataKey {
		return nil, fmt.Errorf("a data key of more than %d bytes", maxDataKey)
	}
	return data, nil
}
