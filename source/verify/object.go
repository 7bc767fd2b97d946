package verify

import (
	"bytes"
	"errors"
	"strconv"
	"time"
)

// signedObject is a raw object taken apart as git takes it apart to verify it.
type signedObject struct {
	// payload is what the signature signs.
	payload []byte
	// signature is the armored signature, nil when there is none.
	signature []byte
	// when is the committer's or tagger's time; zero when the object has none
	// that reads.
	when time.Time
}

// Headers and armor lines git knows signatures by.
const (
	sigHeader       = "gpgsig"
	openpgpBegin    = "-----BEGIN PGP SIGNATURE-----"
	openpgpMessage  = "-----BEGIN PGP MESSAGE-----"
	x509Begin       = "-----BEGIN SIGNED MESSAGE-----"
	sshBegin        = "-----BEGIN SSH SIGNATURE-----"
	sha256HexLength = 64
)

var errSHA256 = errors.New("objects of sha256 repositories are not supported")

// splitCommit takes a raw commit object apart as git does: the signature is
// the value of the gpgsig header (its continuation lines start with one space),
// and the payload is the object without the gpgsig header and without any
// other header that starts with "gpgsig" (gpgsig-sha256, the signature of the
// object's sha256 form, which a sha1 repository ignores). A commit with no
// gpgsig header is unsigned, whatever else it holds.
func splitCommit(raw []byte) (signedObject, error) {
	header, _, _ := bytes.Cut(raw, []byte("\n\n"))
	if isSHA256Object(header, "tree ") {
		return signedObject{}, refuse(Unsupported, "", errSHA256)
	}
	obj := signedObject{when: identTime(header, "committer ")}
	payload := make([]byte, 0, len(raw))
	var inSignature, inOther bool
	signatures := 0
	for rest := raw; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		switch {
		case inSignature && line[0] == ' ':
			obj.signature = append(obj.signature, line[1:]...)
			continue
		case bytes.HasPrefix(line, []byte(sigHeader+" ")):
			obj.signature = append(obj.signature, line[len(sigHeader)+1:]...)
			inSignature, inOther = true, false
			signatures++
			continue
		case bytes.HasPrefix(line, []byte(sigHeader)):
			inSignature, inOther = false, true
			continue
		case inOther && line[0] == ' ':
			continue
		}
		inSignature, inOther = false, false
		if line[0] == '\n' {
			// The message: the rest of the object, as it is.
			payload = append(payload, line...)
			payload = append(payload, rest...)
			break
		}
		payload = append(payload, line...)
	}
	if signatures > 1 {
		return signedObject{}, refuse(Unverifiable, "", errors.New("the commit has more than one gpgsig header"))
	}
	if signatures == 1 && obj.signature == nil {
		obj.signature = []byte{} // a gpgsig header with no value is signed, badly
	}
	obj.payload = payload
	return obj, nil
}

// splitTag takes a raw annotated tag object apart as git does: the signature
// starts at the last line that starts a signature git knows and runs to the
// end of the object; the payload is everything before that line.
func splitTag(raw []byte) (signedObject, error) {
	header, _, _ := bytes.Cut(raw, []byte("\n\n"))
	if isSHA256Object(header, "object ") {
		return signedObject{}, refuse(Unsupported, "", errSHA256)
	}
	obj := signedObject{payload: raw, when: identTime(header, "tagger ")}
	start := -1
	for at := 0; at < len(raw); {
		if signatureKind(raw[at:]) != "" {
			start = at
		}
		i := bytes.IndexByte(raw[at:], '\n')
		if i < 0 {
			break
		}
		at += i + 1
	}
	if start >= 0 {
		obj.payload, obj.signature = raw[:start], raw[start:]
	}
	return obj, nil
}

// signatureKind is the method a signature's first line announces, "x509" for
// a gpgsm signature, or "" when it is none that git knows.
func signatureKind(sig []byte) string {
	switch {
	case bytes.HasPrefix(sig, []byte(openpgpBegin)), bytes.HasPrefix(sig, []byte(openpgpMessage)):
		return MethodOpenPGP
	case bytes.HasPrefix(sig, []byte(sshBegin)):
		return MethodSSH
	case bytes.HasPrefix(sig, []byte(x509Begin)):
		return "x509"
	}
	return ""
}

// isSHA256Object tells whether the header names its tree (or, for a tag, its
// object) by a sha256 id.
func isSHA256Object(header []byte, field string) bool {
	value, ok := headerValue(header, field)
	return ok && len(value) == sha256HexLength
}

// identTime reads the time of the first committer or tagger line of a header:
// "committer Name <email> 1700000000 +0100". The zone does not change the
// instant. It is zero when there is no such line or its time does not read.
func identTime(header []byte, field string) time.Time {
	value, ok := headerValue(header, field)
	if !ok {
		return time.Time{}
	}
	i := bytes.LastIndexByte(value, '>')
	if i < 0 {
		return time.Time{}
	}
	fields := bytes.Fields(value[i+1:])
	if len(fields) == 0 || len(fields[0]) > 12 {
		return time.Time{}
	}
	seconds, err := strconv.ParseInt(string(fields[0]), 10, 64)
	if err != nil || seconds < 0 {
		return time.Time{}
	}
	return time.Unix(seconds, 0).UTC()
}

// headerValue is the value of the first line of header that starts with field
// ("tree ", with its space).
func headerValue(header []byte, field string) ([]byte, bool) {
	for rest := header; len(rest) > 0; {
		line, next, _ := bytes.Cut(rest, []byte("\n"))
		if value, ok := bytes.CutPrefix(line, []byte(field)); ok {
			return value, true
		}
		rest = next
	}
	return nil, false
}

// describeKind names a signature kind this package does not check.
func describeKind(kind string) error {
	if kind == "x509" {
		return errors.New("x509 (gpgsm) signatures are not supported")
	}
	return errors.New("a signature of a kind git does not know")
}
