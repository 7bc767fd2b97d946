package verify

import (
	"bytes"
	"crypto"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// acceptedHashes are the hash functions an OpenPGP signature may use: SHA-1
// and older are refused, since collisions of SHA-1 are practical.
var acceptedHashes = []crypto.Hash{
	crypto.SHA224, crypto.SHA256, crypto.SHA384, crypto.SHA512, crypto.SHA3_256, crypto.SHA3_512,
}

// verifyOpenPGP checks an armored OpenPGP detached signature over the payload.
func (k *Keys) verifyOpenPGP(obj signedObject) (Signer, error) {
	body, err := dearmor(obj.signature)
	if err != nil {
		return Signer{}, err
	}
	sig, err := readSignature(body)
	if err != nil {
		return Signer{}, err
	}
	keyID := *sig.IssuerKeyId
	keys := k.openpgp.KeysByIdUsage(keyID, packet.KeyFlagSign)
	if len(keys) == 0 {
		if held := k.openpgp.KeysById(keyID); len(held) > 0 {
			return Signer{}, refuse(KeyNotValid, openpgpSigner(held[0].Entity).String(), errors.New("the key is not a signing key"))
		}
		return Signer{}, refuse(UnknownKey, issuerOf(sig), nil)
	}
	at := openpgpTime(obj, sig)
	config := &packet.Config{Time: func() time.Time { return at }}
	_, entity, err := openpgp.VerifyDetachedSignature(k.openpgp, bytes.NewReader(obj.payload), bytes.NewReader(body), config)
	if entity == nil {
		if err == nil {
			err = errors.New("no trusted key verifies it")
		}
		return Signer{}, refuse(BadSignature, openpgpSigner(keys[0].Entity).String(), quiet(err))
	}
	signer := openpgpSigner(entity)
	if err != nil {
		return Signer{}, refuse(KeyNotValid, signer.String(), fmt.Errorf("at %s: %w", stamp(at), quiet(err)))
	}
	if err := revokedNow(entity, keyID); err != nil {
		return Signer{}, refuse(KeyNotValid, signer.String(), err)
	}
	return signer, nil
}

// dearmor decodes an armored signature into its packets. Only whitespace may
// follow the armor's END line.
func dearmor(sig []byte) ([]byte, error) {
	if err := checkEnd(sig, "-----END PGP "); err != nil {
		return nil, err
	}
	block, err := armor.Decode(bytes.NewReader(sig))
	if err != nil {
		return nil, refuse(Unverifiable, "", fmt.Errorf("the OpenPGP armor does not decode: %w", quiet(err)))
	}
	body, err := io.ReadAll(io.LimitReader(block.Body, MaxObject))
	if err != nil {
		return nil, refuse(Unverifiable, "", fmt.Errorf("the OpenPGP armor does not decode: %w", quiet(err)))
	}
	return body, nil
}

// checkEnd refuses a signature with no END line, or with text after it.
func checkEnd(sig []byte, end string) error {
	i := bytes.Index(sig, []byte("\n"+end))
	if i < 0 {
		return refuse(Unverifiable, "", errors.New("the signature has no END line"))
	}
	rest := sig[i+1:]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 && len(bytes.TrimSpace(rest[j:])) > 0 {
		return refuse(Unverifiable, "", errors.New("text follows the signature's END line"))
	}
	return nil
}

// readSignature reads the one signature packet of a detached signature.
func readSignature(body []byte) (*packet.Signature, error) {
	packets := packet.NewReader(bytes.NewReader(body))
	p, err := packets.NextWithUnsupported()
	if errors.Is(err, io.EOF) {
		return nil, refuse(Unverifiable, "", errors.New("the OpenPGP armor holds no signature"))
	}
	if err != nil {
		return nil, refuse(Unverifiable, "", fmt.Errorf("the OpenPGP signature does not read: %w", quiet(err)))
	}
	var sig *packet.Signature
	switch p := p.(type) {
	case *packet.Signature:
		sig = p
	case *packet.UnsupportedPacket:
		return nil, refuse(Unsupported, "", quiet(p.Error))
	default:
		return nil, refuse(Unverifiable, "", errors.New("the OpenPGP armor holds a packet that is not a signature"))
	}
	if _, err := packets.NextWithUnsupported(); !errors.Is(err, io.EOF) {
		return nil, refuse(Unverifiable, "", errors.New("the OpenPGP armor holds more than one packet"))
	}
	switch {
	case sig.IssuerKeyId == nil:
		return nil, refuse(Unverifiable, "", errors.New("the OpenPGP signature names no key"))
	case sig.SigType != packet.SigTypeBinary && sig.SigType != packet.SigTypeText:
		return nil, refuse(Unsupported, issuerOf(sig), errors.New("the OpenPGP signature is not a signature of data"))
	case !slices.Contains(acceptedHashes, sig.Hash):
		return nil, refuse(Unsupported, issuerOf(sig), fmt.Errorf("OpenPGP signatures made with %s are refused", sig.Hash))
	}
	return sig, nil
}

// issuerOf names the key a signature claims: its issuer fingerprint, or its
// key id when it carries no fingerprint.
func issuerOf(sig *packet.Signature) string {
	if n := len(sig.IssuerFingerprint); n > 0 && n <= 32 {
		return strings.ToUpper(hex.EncodeToString(sig.IssuerFingerprint))
	}
	return fmt.Sprintf("%016X", *sig.IssuerKeyId)
}

// openpgpTime is the time the key is judged at: the object's time, or the
// signature's creation time when it is later. go-crypto refuses a signature
// created after the time it judges at, and git dates a commit before it asks
// for the signature (a second may pass, and rebases keep old committer dates).
// An object without a time is judged now.
func openpgpTime(obj signedObject, sig *packet.Signature) time.Time {
	at := validityTime(obj)
	if sig.CreationTime.After(at) {
		return sig.CreationTime.UTC()
	}
	return at
}

// revokedNow refuses a key revoked today, whatever time the object claims: a
// revoked key may be in other hands, who can date an object as they please.
func revokedNow(e *openpgp.Entity, keyID uint64) error {
	now := time.Now()
	if e.Revoked(now) {
		return errors.New("the key is revoked")
	}
	if id := e.PrimaryIdentity(); id != nil && id.Revoked(now) {
		return errors.New("the key's primary user id is revoked")
	}
	for _, sub := range e.Subkeys {
		if sub.PublicKey.KeyId == keyID && sub.Revoked(now) {
			return errors.New("the signing subkey is revoked")
		}
	}
	return nil
}
