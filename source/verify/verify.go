package verify

import (
	"fmt"
	"time"
)

// MaxObject bounds the raw object Commit and Tag accept; a larger one is
// refused as Unverifiable before it is read.
const MaxObject = 1 << 20

// Commit verifies a raw commit object: the bytes git stores after the
// "commit <length>\0" header, as `git cat-file commit` prints them. The
// signature is the gpgsig header's value; the signed payload is the object
// without that header and its continuation lines, exactly as git computes it.
// Commits of sha256 repositories are refused as Unsupported; a sha1 commit
// whose only signature is a gpgsig-sha256 header is Unsigned, as git sees it.
//
// On success Signer names the trusted key; otherwise the error is an *Error.
func (k *Keys) Commit(raw []byte) (Signer, error) {
	return guard(func() (Signer, error) { return k.commit(raw) })
}

// Tag verifies a raw annotated tag object (`git cat-file tag`): the signature
// is appended to the message, from a line "-----BEGIN PGP SIGNATURE-----" or
// "-----BEGIN SSH SIGNATURE-----" through its END line; the payload is
// everything before that line.
//
// On success Signer names the trusted key; otherwise the error is an *Error.
func (k *Keys) Tag(raw []byte) (Signer, error) {
	return guard(func() (Signer, error) { return k.tag(raw) })
}

func (k *Keys) commit(raw []byte) (Signer, error) {
	if err := checkSize(raw); err != nil {
		return Signer{}, err
	}
	obj, err := splitCommit(raw)
	if err != nil {
		return Signer{}, err
	}
	return k.verify(obj)
}

func (k *Keys) tag(raw []byte) (Signer, error) {
	if err := checkSize(raw); err != nil {
		return Signer{}, err
	}
	obj, err := splitTag(raw)
	if err != nil {
		return Signer{}, err
	}
	return k.verify(obj)
}

func checkSize(raw []byte) error {
	if len(raw) > MaxObject {
		return refuse(Unverifiable, "", fmt.Errorf("it is %d bytes, over the bound of %d", len(raw), MaxObject))
	}
	return nil
}

// verify checks the signature of an object taken apart, by its kind.
func (k *Keys) verify(obj signedObject) (Signer, error) {
	if obj.signature == nil {
		return Signer{}, refuse(Unsigned, "", nil)
	}
	if k == nil {
		k = &Keys{}
	}
	switch kind := signatureKind(obj.signature); kind {
	case MethodOpenPGP:
		return k.verifyOpenPGP(obj)
	case MethodSSH:
		return k.verifySSH(obj)
	default:
		return Signer{}, refuse(Unsupported, "", describeKind(kind))
	}
}

// validityTime is the time a key is judged at: the object's own time, or now
// when the object has none that reads (as git does for SSH signatures).
func validityTime(obj signedObject) time.Time {
	if obj.when.IsZero() {
		return time.Now().UTC()
	}
	return obj.when
}

// guard turns a panic of a library reading hostile bytes into a refusal. The
// package's own code is fuzzed without it (FuzzCommit).
func guard(verify func() (Signer, error)) (s Signer, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = Signer{}, refuse(Unverifiable, "", fmt.Errorf("verification failed: %s", sanitize(fmt.Sprint(r))))
		}
	}()
	return verify()
}
