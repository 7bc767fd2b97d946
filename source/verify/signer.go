package verify

// Signer is who signed an object, as the trusted keys name them: never what the
// object claims about its author.
type Signer struct {
	// Method is "openpgp" or "ssh".
	Method string
	// Identity comes from the trusted key material: the OpenPGP key's primary
	// user id ("Name <email>"), or the principals of the allowed_signers line,
	// comma-joined. It may be empty for an OpenPGP key without a user id.
	Identity string
	// Key is the key's fingerprint: the upper-case hex fingerprint of the
	// OpenPGP primary key, or ssh.FingerprintSHA256 of the SSH key
	// ("SHA256:…").
	Key string
}

// Methods of Signer.
const (
	MethodOpenPGP = "openpgp"
	MethodSSH     = "ssh"
)

// String is how messages name the signer: "Alice <alice@example.com> (openpgp
// 0123…ABCD)", "ci@example.com (ssh SHA256:…)".
func (s Signer) String() string {
	if s == (Signer{}) {
		return ""
	}
	if s.Identity == "" {
		return s.Method + " key " + s.Key
	}
	return s.Identity + " (" + s.Method + " " + s.Key + ")"
}
