package cosign

// Signer is the trusted key that signed an artifact, as the keys Secret names
// it: never what the signature or its payload claims.
type Signer struct {
	// Key is the data key of the Secret entry holding the public key.
	Key string
	// Fingerprint is the SHA-256 of the public key's PKIX DER, as ssh-keygen
	// shows fingerprints: "SHA256:" and unpadded base64.
	Fingerprint string
}

// String is how messages name the signer: "cosign key cosign.pub
// (SHA256:…)".
func (s Signer) String() string {
	if s == (Signer{}) {
		return ""
	}
	return "cosign key " + s.Key + " (" + s.Fingerprint + ")"
}
