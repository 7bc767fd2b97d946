package verify

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
)

// Armor lines of OpenPGP key blocks.
const (
	armorPrefix     = "-----BEGIN PGP "
	publicKeyBegin  = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
	publicKeyEnd    = "-----END PGP PUBLIC KEY BLOCK-----"
	privateKeyBegin = "-----BEGIN PGP PRIVATE KEY BLOCK-----"
)

// isOpenPGP tells an entry of armored OpenPGP data from allowed_signers lines,
// which never hold an armor line.
func isOpenPGP(value []byte) bool {
	return bytes.Contains(value, []byte(armorPrefix))
}

// readOpenPGP reads every public key block of an entry. It returns the keys
// and, for the digest, each block's decoded packets.
func readOpenPGP(entry string, value []byte) (openpgp.EntityList, [][]byte, error) {
	fail := func(err error) (openpgp.EntityList, [][]byte, error) {
		return nil, nil, &KeyError{Entry: entry, Err: err}
	}
	if bytes.Contains(value, []byte(privateKeyBegin)) {
		return fail(errors.New("holds an OpenPGP private key: give public keys only (gpg --export --armor)"))
	}
	var entities openpgp.EntityList
	var blocks [][]byte
	for rest := value; ; {
		start := bytes.Index(rest, []byte(publicKeyBegin))
		if start < 0 {
			break
		}
		end := bytes.Index(rest[start:], []byte(publicKeyEnd))
		if end < 0 {
			return fail(errors.New("an OpenPGP public key block has no END line"))
		}
		end += start + len(publicKeyEnd)
		body, list, err := readKeyBlock(rest[start:end])
		if err != nil {
			return fail(fmt.Errorf("OpenPGP public key block %d: %w", len(blocks)+1, err))
		}
		entities = append(entities, list...)
		blocks = append(blocks, body)
		rest = rest[end:]
	}
	if len(blocks) == 0 {
		return fail(errors.New("holds an armored OpenPGP block that is not a public key block"))
	}
	return entities, blocks, nil
}

// readKeyBlock decodes one armored public key block: its packets and the keys
// they hold.
func readKeyBlock(block []byte) ([]byte, openpgp.EntityList, error) {
	b, err := armor.Decode(bytes.NewReader(block))
	if err != nil {
		return nil, nil, fmt.Errorf("the armor does not decode: %w", quiet(err))
	}
	body, err := io.ReadAll(b.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("the armor does not decode: %w", quiet(err))
	}
	list, err := openpgp.ReadKeyRing(bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("no key could be read: %w", quiet(err))
	}
	return body, list, nil
}

// openpgpSigner names an entity as the trusted keys do: its primary user id
// and its primary key's fingerprint.
func openpgpSigner(e *openpgp.Entity) Signer {
	s := Signer{Method: MethodOpenPGP, Key: strings.ToUpper(fmt.Sprintf("%x", e.PrimaryKey.Fingerprint))}
	if id := e.PrimaryIdentity(); id != nil {
		s.Identity = sanitize(id.Name)
	}
	return s
}
