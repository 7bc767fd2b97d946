package verify

import (
	"bytes"
	"fmt"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// verifySSH checks an armored sshsig signature (what git writes with
// gpg.format=ssh) over the payload: its key must be one of the allowed
// signers, it must be made in namespace git and verify, and one allowed_signers
// line of its key must admit it at the object's time.
func (k *Keys) verifySSH(obj signedObject) (Signer, error) {
	if err := checkEnd(obj.signature, "-----END SSH SIGNATURE-----"); err != nil {
		return Signer{}, err
	}
	sig, err := sshsig.Unarmor(obj.signature)
	if err != nil {
		return Signer{}, refuse(Unverifiable, "", fmt.Errorf("the SSH signature does not read: %w", quiet(err)))
	}
	lines := k.signersOf(sig.PublicKey)
	if len(lines) == 0 {
		return Signer{}, refuse(UnknownKey, ssh.FingerprintSHA256(sig.PublicKey), nil)
	}
	signer := lines[0].signer()
	if sig.Namespace != gitNamespace {
		return Signer{}, refuse(BadSignature, signer.String(), fmt.Errorf("it is made for namespace %q, not git", sanitize(sig.Namespace)))
	}
	if err := sshsig.Verify(bytes.NewReader(obj.payload), sig, lines[0].key, sig.HashAlgorithm, gitNamespace); err != nil {
		return Signer{}, refuse(BadSignature, signer.String(), quiet(err))
	}
	at := validityTime(obj)
	var refusal error
	for _, line := range lines {
		err := line.admit(at)
		if err == nil {
			return line.signer(), nil
		}
		if refusal == nil {
			refusal = err
		}
	}
	return Signer{}, refuse(KeyNotValid, signer.String(), refusal)
}

// signersOf are the allowed_signers lines of a key, in the order they were read.
func (k *Keys) signersOf(key ssh.PublicKey) []*allowedSigner {
	blob := key.Marshal()
	var lines []*allowedSigner
	for i := range k.ssh {
		if bytes.Equal(k.ssh[i].blob, blob) {
			lines = append(lines, &k.ssh[i])
		}
	}
	return lines
}
