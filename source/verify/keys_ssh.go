package verify

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// gitNamespace is the sshsig namespace git signs commits and tags in.
const gitNamespace = "git"

// allowedSigner is one line of an allowed_signers entry.
type allowedSigner struct {
	principals []string
	key        ssh.PublicKey
	// blob is key.Marshal(), which a signature's key is compared with.
	blob []byte
	// namespaces are the namespaces the key is trusted for; nil is every one.
	namespaces []string
	// validAfter and validBefore bound the object's time; zero is no bound.
	validAfter, validBefore time.Time
}

// readAllowedSigners reads the lines of an allowed_signers entry.
func readAllowedSigners(entry string, value []byte) ([]allowedSigner, error) {
	var signers []allowedSigner
	for i, line := range strings.Split(string(value), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseAllowedSigner(line)
		if err != nil {
			return nil, &KeyError{Entry: entry, Line: i + 1, Err: err}
		}
		signers = append(signers, s)
	}
	return signers, nil
}

// parseAllowedSigner reads `principals [options] keytype base64 [comment]`.
// Its errors never quote the line.
func parseAllowedSigner(line string) (allowedSigner, error) {
	principals, rest, err := splitPrincipals(line)
	if err != nil {
		return allowedSigner{}, err
	}
	// After the principals, the line reads as an authorized_keys line does.
	key, _, options, _, err := ssh.ParseAuthorizedKey([]byte(rest))
	if err != nil {
		return allowedSigner{}, errors.New("no SSH public key after the principals (want: principals [options] keytype base64 [comment])")
	}
	if _, ok := key.(*ssh.Certificate); ok {
		return allowedSigner{}, errors.New("an SSH certificate: certificates are not supported")
	}
	s := allowedSigner{principals: principals, key: key, blob: key.Marshal()}
	seen := map[string]bool{}
	for _, opt := range options {
		name, value, _ := strings.Cut(opt, "=")
		name = strings.ToLower(name)
		if seen[name] {
			return allowedSigner{}, fmt.Errorf("option %q given twice", sanitize(name))
		}
		seen[name] = true
		if err := s.option(name, value); err != nil {
			return allowedSigner{}, err
		}
	}
	return s, nil
}

// splitPrincipals cuts the principals field off a line: comma-separated
// principals, where a double-quoted part may hold spaces or commas ("a b",c).
func splitPrincipals(line string) (principals []string, rest string, err error) {
	var cur strings.Builder
	quoted := false
	i := 0
field:
	for ; i < len(line); i++ {
		switch c := line[i]; {
		case c == '"':
			quoted = !quoted
		case quoted:
			cur.WriteByte(c)
		case c == ' ' || c == '\t':
			break field
		case c == ',':
			principals = append(principals, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	if quoted {
		return nil, "", errors.New("the principals have an unterminated quote")
	}
	principals = append(principals, cur.String())
	if slices.Contains(principals, "") {
		return nil, "", errors.New("an empty principal")
	}
	rest = strings.TrimLeft(line[i:], " \t")
	if rest == "" {
		return nil, "", errors.New("no SSH public key after the principals (want: principals [options] keytype base64 [comment])")
	}
	return principals, rest, nil
}

// option applies one option of the line.
func (s *allowedSigner) option(name, value string) error {
	switch name {
	case "cert-authority":
		return errors.New("option cert-authority: certificates are not supported")
	case "namespaces":
		namespaces, err := parseNamespaces(unquote(value))
		if err != nil {
			return fmt.Errorf("option namespaces: %w", err)
		}
		s.namespaces = namespaces
	case "valid-after":
		t, err := parseTimestamp(unquote(value))
		if err != nil {
			return fmt.Errorf("option valid-after: %w", err)
		}
		s.validAfter = t
	case "valid-before":
		t, err := parseTimestamp(unquote(value))
		if err != nil {
			return fmt.Errorf("option valid-before: %w", err)
		}
		s.validBefore = t
	default:
		return fmt.Errorf("option %q is not supported (namespaces, valid-after and valid-before are)", sanitize(name))
	}
	return nil
}

// unquote takes the double quotes off an option's value.
func unquote(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		return v[1 : len(v)-1]
	}
	return v
}

// parseNamespaces reads a comma-separated list of namespaces. ssh-keygen reads
// it as a pattern list; patterns are refused here rather than read otherwise.
func parseNamespaces(v string) ([]string, error) {
	var namespaces []string
	for _, ns := range strings.Split(v, ",") {
		ns = strings.TrimSpace(ns)
		switch {
		case ns == "":
			return nil, errors.New("an empty namespace")
		case strings.ContainsAny(ns, `*?!"`):
			return nil, errors.New("namespace patterns are not supported: list the namespaces (git)")
		}
		namespaces = append(namespaces, ns)
	}
	return namespaces, nil
}

// parseTimestamp reads a valid-after or valid-before time: YYYYMMDD,
// YYYYMMDDHHMM or YYYYMMDDHHMMSS, with an optional trailing Z. ssh-keygen reads
// a time without Z in the local time zone; an agent's local zone means nothing
// to whoever wrote the Secret, so it is UTC here either way.
func parseTimestamp(v string) (time.Time, error) {
	v = strings.TrimSuffix(v, "Z")
	layout := map[int]string{8: "20060102", 12: "200601021504", 14: "20060102150405"}[len(v)]
	if layout == "" || strings.Trim(v, "0123456789") != "" {
		return time.Time{}, errors.New("want YYYYMMDD, YYYYMMDDHHMM or YYYYMMDDHHMMSS, with an optional Z")
	}
	t, err := time.ParseInLocation(layout, v, time.UTC)
	if err != nil {
		return time.Time{}, errors.New("not a date and time")
	}
	return t, nil
}

// admit tells whether the line trusts its key for a git signature on an object
// of time at, and why not.
func (s *allowedSigner) admit(at time.Time) error {
	if s.namespaces != nil && !slices.Contains(s.namespaces, gitNamespace) {
		return errors.New("its allowed_signers line does not trust it for namespace git")
	}
	if !s.validAfter.IsZero() && at.Before(s.validAfter) {
		return fmt.Errorf("its allowed_signers line makes it valid after %s, not at %s", stamp(s.validAfter), stamp(at))
	}
	if !s.validBefore.IsZero() && at.After(s.validBefore) {
		return fmt.Errorf("its allowed_signers line makes it valid before %s, not at %s", stamp(s.validBefore), stamp(at))
	}
	return nil
}

// signer names the line's key: its principals and fingerprint.
func (s *allowedSigner) signer() Signer {
	return Signer{
		Method:   MethodSSH,
		Identity: sanitize(strings.Join(s.principals, ",")),
		Key:      ssh.FingerprintSHA256(s.key),
	}
}

// canonical is what the line trusts, for the digest: neither its comment nor
// its spelling.
func (s *allowedSigner) canonical() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "ssh %q %t %q %d %d %x",
		strings.Join(s.principals, "\x00"),
		s.namespaces != nil, strings.Join(s.namespaces, "\x00"),
		unixOrZero(s.validAfter), unixOrZero(s.validBefore), s.blob)
	return b.Bytes()
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// stamp formats a time for messages.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
