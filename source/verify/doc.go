// Package verify decides whether a raw git commit object, or a raw annotated
// tag object, carries a good signature by a trusted key. It is pure logic: it
// reads bytes it is handed (the object as `git cat-file` prints it, and a
// Secret's data), runs no git, gpg or ssh-keygen, reads no file, keyring, key
// server or cluster, and logs nothing; the caller decides what a refusal means
// for a Sync.
//
// Data flows in two steps. ParseKeys reads the trusted keys (keys.go): each
// entry of the Secret is either armored OpenPGP public keys (keys_openpgp.go)
// or SSH allowed_signers lines as git's gpg.ssh.allowedSignersFile holds them
// (keys_ssh.go), told apart by content; Keys.Digest identifies what they trust
// so that verdicts can be cached per (object, keys). Keys.Commit and Keys.Tag
// then take an object apart exactly as git does (object.go: the gpgsig header
// of a commit, the trailing signature block of a tag, the committer or tagger
// time) and check the signature by its kind (verify.go): OpenPGP with
// go-crypto (verify_openpgp.go), SSH signatures in the sshsig format
// (verify_ssh.go). Success names the Signer from the trusted key material, never
// from the object; a refusal is an *Error whose Reason classes it.
//
// What is verified: that the signature is well-formed, is made by a key the
// trusted keys hold (compared by key, not by the name or email the object
// claims), and verifies over the exact bytes git signs; for SSH, that it is made
// in namespace "git" and that an allowed_signers line of its key admits it
// (namespaces, valid-after, valid-before); for OpenPGP, that the key may sign,
// was not expired at the object's time, and is not revoked today, and that the
// signature hashes with SHA-2 or SHA-3 (SHA-1 collisions are practical).
//
// What is not: there is no web of trust (every key given is trusted fully and
// no other key is trusted through it), no key server, no revocation but what
// the given keys carry, and no check that the signer is the commit's author or
// committer. The time a key is judged at is the object's own claim (the
// committer's or tagger's time, or an OpenPGP signature's creation time when it
// is later): whoever holds a key that has since expired can still sign an
// object dated while it was valid. git judges SSH keys so too (it passes the
// committer's time to ssh-keygen); for OpenPGP git is stricter, and refuses a
// good signature by a key expired today, which this package accepts so that
// history signed before a key's expiry stays verified. Revocation is judged
// today, whatever the object claims. x509 (gpgsm) signatures, SSH
// certificates and objects of sha256 repositories are not supported.
//
// Repository content is hostile: an object over MaxObject is refused before it
// is read, nothing panics on malformed input (a library's panic becomes a
// refusal), and no message quotes the object's bytes but through a sanitizer
// (control and non-printing characters dropped, cut short) nor any key
// material.
package verify
