package sops

import (
	"crypto/sha512"
	"fmt"
	"hash"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A SOPS file, whatever its format, is read into a tree of the same shape as
// SOPS's own: ordered mappings (sopsMap), lists ([]any), and leaves (string,
// int, float64, bool, []byte, time.Time, nil). Comments are items of their
// own: a mapping item whose key is a sopsComment, or a list element that is
// one. SOPS encrypts comments as it encrypts values, and leaves them out of
// its MAC.

// sopsComment is one comment line, without its '#'.
type sopsComment struct {
	text string
	// inline marks a comment written after a value on its line.
	inline bool
}

// sopsItem is one entry of a mapping: key is a string, or a sopsComment (the
// value then nil).
type sopsItem struct {
	key   any
	value any
}

// sopsMap is a mapping in the order of the file.
type sopsMap []sopsItem

// maxSOPSDepth bounds how deep a SOPS file nests: the tree is walked
// recursively, and a hostile file must not exhaust the stack.
const maxSOPSDepth = 1000

var errSOPSTooDeep = fmt.Errorf("nests deeper than %d levels", maxSOPSDepth)

// macOnlyEncryptedSeed starts the MAC of a file written with
// mac_only_encrypted, as SOPS defines it, so that such a MAC never equals one
// over every value.
var macOnlyEncryptedSeed = []byte{0x8a, 0x3f, 0xd2, 0xad, 0x54, 0xce, 0x66, 0x52, 0x7b, 0x10, 0x34, 0xf3, 0xd1, 0x47, 0xbe, 0xb,
	0xb, 0x97, 0x5b, 0x3b, 0xf4, 0x4f, 0x72, 0xc6, 0xfd, 0xad, 0xec, 0x81, 0x76, 0xf2, 0x7d, 0x69}

// treeDecryption decrypts a tree's values in place with a data key, and
// computes the MAC of what it decrypted.
type treeDecryption struct {
	key   []byte
	rules *encryptionRules
	// macOnlyEncrypted leaves the values SOPS did not encrypt out of the MAC.
	macOnlyEncrypted bool
	mac              hash.Hash
}

// decryptTree decrypts the values of branches in place and returns their MAC
// (SHA-512 of the values in order, upper-case hex), to compare with the one
// the file stores. A value that does not decrypt is an error.
func decryptTree(branches []sopsMap, key []byte, meta *sopsMetadata) (string, error) {
	d := &treeDecryption{key: key, rules: meta.rules, macOnlyEncrypted: meta.macOnlyEncrypted, mac: sha512.New()}
	if d.macOnlyEncrypted {
		d.mac.Write(macOnlyEncryptedSeed)
	}
	for _, b := range branches {
		if err := d.mapping(b, nil, nil); err != nil {
			return "", err
		}
	}
	return strings.ToUpper(fmt.Sprintf("%x", d.mac.Sum(nil))), nil
}

// The walk keeps, per level, the comments met since the last value (what
// the comment rules of encryptionRules read).

func (d *treeDecryption) mapping(m sopsMap, path []string, comments [][]string) error {
	if len(comments) > maxSOPSDepth {
		return errSOPSTooDeep
	}
	comments = append(comments, nil)
	top := len(comments) - 1
	for i, item := range m {
		if c, ok := item.key.(sopsComment); ok {
			comments[top] = append(comments[top], c.text)
			v, err := d.leaf(c, path, comments)
			if err != nil {
				return err
			}
			switch v := v.(type) {
			case sopsComment:
				m[i].key = v
			case string:
				m[i].key = sopsComment{text: v, inline: c.inline}
			default:
				return fmt.Errorf("a comment decrypts to a %T", v)
			}
			continue
		}
		c, valueIsComment := item.value.(sopsComment)
		if valueIsComment {
			comments[top] = append(comments[top], c.text)
		}
		key, ok := item.key.(string)
		if !ok {
			return fmt.Errorf("a key is a %T, not a string", item.key)
		}
		v, err := d.value(item.value, append(path[:len(path):len(path)], key), comments)
		if err != nil {
			return err
		}
		m[i].value = v
		if !valueIsComment {
			comments[top] = nil
		}
	}
	return nil
}

func (d *treeDecryption) list(l []any, path []string, comments [][]string) error {
	if len(comments) > maxSOPSDepth {
		return errSOPSTooDeep
	}
	comments = append(comments, nil)
	top := len(comments) - 1
	for i, item := range l {
		c, isComment := item.(sopsComment)
		if isComment {
			comments[top] = append(comments[top], c.text)
		}
		v, err := d.value(item, path, comments)
		if err != nil {
			return err
		}
		l[i] = v
		if !isComment {
			comments[top] = nil
		}
	}
	return nil
}

func (d *treeDecryption) value(v any, path []string, comments [][]string) (any, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case sopsMap:
		return v, d.mapping(v, path, comments)
	case []any:
		return v, d.list(v, path, comments)
	case []byte:
		return d.leaf(string(v), path, comments)
	case string, int, float64, bool, time.Time, sopsComment:
		return d.leaf(v, path, comments)
	default:
		return nil, fmt.Errorf("a value of type %T", v)
	}
}

// leaf decrypts one value (or comment) when the rules say SOPS encrypted it,
// and adds it to the MAC.
func (d *treeDecryption) leaf(in any, path []string, comments [][]string) (any, error) {
	c, isComment := in.(sopsComment)
	encrypted := d.rules.encrypted(path, comments, isComment)
	out := in
	if encrypted {
		aad := strings.Join(path, ":") + ":"
		switch {
		case isComment:
			v, err := decryptValue(c.text, d.key, aad)
			if err == nil {
				out = v
			} // else a comment SOPS did not encrypt (older versions did not): kept as it is
		default:
			s, ok := in.(string)
			if !ok {
				return nil, fmt.Errorf("a %T where an encrypted value belongs", in)
			}
			v, err := decryptValue(s, d.key, aad)
			if err != nil {
				return nil, err
			}
			out = v
		}
	}
	if !d.macOnlyEncrypted || encrypted {
		if _, ok := out.(sopsComment); !ok {
			b, err := sopsBytes(out)
			if err != nil {
				return nil, err
			}
			d.mac.Write(b)
		}
	}
	return out, nil
}

// sopsBytes is a value as the MAC hashes it (and as SOPS encrypts it).
func sopsBytes(v any) ([]byte, error) {
	switch v := v.(type) {
	case string:
		return []byte(v), nil
	case int:
		return []byte(strconv.Itoa(v)), nil
	case float64:
		return []byte(strconv.FormatFloat(v, 'f', -1, 64)), nil
	case bool:
		if v {
			return []byte("True"), nil
		}
		return []byte("False"), nil
	case []byte:
		return v, nil
	case time.Time:
		return v.MarshalText()
	case sopsComment:
		return []byte(v.text), nil
	}
	return nil, fmt.Errorf("a value of type %T", v)
}

// encryptionRules say which values of a file SOPS encrypted: at most one of
// its suffix, regex and comment-regex rules (unencrypted_suffix
// "_unencrypted" when the file names none).
type encryptionRules struct {
	unencryptedSuffix, encryptedSuffix string
	// A regex that does not compile matches nothing, as in SOPS.
	unencryptedRegex, encryptedRegex               *regexp.Regexp
	unencryptedCommentRegex, encryptedCommentRegex *regexp.Regexp
	// Which rules the file names, a regex set even when it did not compile.
	hasUnencryptedRegex, hasEncryptedRegex               bool
	hasUnencryptedCommentRegex, hasEncryptedCommentRegex bool
}

func matches(re *regexp.Regexp, s string) bool {
	return re != nil && re.MatchString(s)
}

// encrypted reports whether SOPS encrypted the value (or comment) at path,
// after the comments met on the way to it.
func (r *encryptionRules) encrypted(path []string, comments [][]string, isComment bool) bool {
	encrypted := r.unencryptedSuffix == "" || !anyOf(path, func(p string) bool { return strings.HasSuffix(p, r.unencryptedSuffix) })
	if r.encryptedSuffix != "" {
		encrypted = anyOf(path, func(p string) bool { return strings.HasSuffix(p, r.encryptedSuffix) })
	}
	if r.hasUnencryptedRegex && anyOf(path, func(p string) bool { return matches(r.unencryptedRegex, p) }) {
		encrypted = false
	}
	if r.hasEncryptedRegex {
		encrypted = anyOf(path, func(p string) bool { return matches(r.encryptedRegex, p) })
	}
	if r.hasUnencryptedCommentRegex && r.commentMatches(comments, r.unencryptedCommentRegex, false) {
		encrypted = false
	}
	if r.hasEncryptedCommentRegex {
		encrypted = r.commentMatches(comments, r.encryptedCommentRegex, isComment)
	}
	return encrypted
}

// commentMatches reports whether a comment met on the way matches re; the
// comment being decided (the last one met, when skipSelf) does not count.
func (r *encryptionRules) commentMatches(comments [][]string, re *regexp.Regexp, skipSelf bool) bool {
	for i, level := range comments {
		for j, c := range level {
			if skipSelf && i == len(comments)-1 && j == len(level)-1 {
				continue
			}
			if matches(re, c) {
				return true
			}
		}
	}
	return false
}

func anyOf(path []string, f func(string) bool) bool {
	for _, p := range path {
		if f(p) {
			return true
		}
	}
	return false
}
