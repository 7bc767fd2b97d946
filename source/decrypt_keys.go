package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"filippo.io/age"
	agearmor "filippo.io/age/armor"
	"github.com/ProtonMail/go-crypto/openpgp"
	pgparmor "github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/getsops/sops/v3/keyservice"
)

// maxDataKey bounds what one master key may decrypt to: a SOPS data key is 32
// bytes, and a hostile file must not make the agent decrypt more.
const maxDataKey = 1024

// keyServer is SOPS's key service answering with one Sync's keys only. SOPS's
// own local key service would read the agent's environment and files
// (SOPS_AGE_KEY_FILE, GNUPGHOME, cloud credentials) and run gpg; this one knows
// age and OpenPGP, from the keys it holds, and refuses everything else.
type keyServer struct {
	keys *Keys
}

var _ keyservice.KeyServiceServer = keyServer{}

// Encrypt is refused: the agent only decrypts.
func (keyServer) Encrypt(context.Context, *keyservice.EncryptRequest) (*keyservice.EncryptResponse, error) {
	return nil, errors.New("the agent does not encrypt")
}

// Decrypt opens one master key's copy of a file's data key.
func (s keyServer) Decrypt(_ context.Context, req *keyservice.DecryptRequest) (*keyservice.DecryptResponse, error) {
	var plain []byte
	var err error
	switch k := req.GetKey().GetKeyType().(type) {
	case *keyservice.Key_AgeKey:
		plain, err = s.keys.openAge(req.GetCiphertext())
	case *keyservice.Key_PgpKey:
		plain, err = s.keys.openPGP(req.GetCiphertext())
	default:
		err = fmt.Errorf("%T master keys are not supported: the agent decrypts with age and OpenPGP keys only", k)
	}
	if err != nil {
		return nil, err
	}
	return &keyservice.DecryptResponse{Plaintext: plain}, nil
}

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
