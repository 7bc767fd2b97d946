package sops

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/result"
)

// sopsFormat reads a SOPS file's tree and writes it back in clear.
type sopsFormat interface {
	load(in []byte) ([]sopsMap, error)
	emit(branches []sopsMap) ([]byte, error)
}

// SOPS's metadata, as each format writes it: a file is taken for a SOPS file by
// it, never by its name. The name only says which format to read it in, as it
// does for the sops CLI.
var (
	yamlMetadata   = regexp.MustCompile(`(?m)^sops:`)
	dotenvMetadata = regexp.MustCompile(`(?m)^sops_mac=`)
	jsonMetadata   = []byte(`"sops"`)
)

// sopsFormatFor returns the format that reads data, the content of the file
// name, when data carries SOPS's metadata; nil when it does not. A .yaml or .yml
// file is read as YAML, .json as JSON, .env as dotenv, and any other file as
// SOPS writes a binary file (a JSON document whose data holds the content).
func sopsFormatFor(name string, data []byte) sopsFormat {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml":
		if yamlMetadata.Match(data) {
			return sopsYAML{}
		}
	case ".json":
		if bytes.Contains(data, jsonMetadata) {
			return sopsJSON{}
		}
	case ".env":
		if dotenvMetadata.Match(data) {
			return sopsDotenv{}
		}
	default:
		if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) && bytes.Contains(data, jsonMetadata) {
			return sopsBinary{}
		}
	}
	return nil
}

// IsFile reports whether data, the content of the file name, carries SOPS's
// metadata in the format the name says (sopsFormatFor).
func IsFile(name string, data []byte) bool { return sopsFormatFor(name, data) != nil }

// loadSOPS reads a SOPS file into its tree and its metadata, which it takes
// out of the tree: errNoSOPSMetadata when there is none.
func loadSOPS(format sopsFormat, data []byte) ([]sopsMap, *sopsMetadata, error) {
	branches, err := format.load(data)
	if err != nil {
		return nil, nil, err
	}
	var tree sopsMap
	if _, ok := format.(sopsDotenv); ok {
		branches[0], tree, err = takeDotenvMetadata(branches[0])
	} else {
		tree, err = takeMetadata(branches)
	}
	if err != nil {
		return nil, nil, err
	}
	meta, err := parseSOPSMetadata(tree)
	return branches, meta, err
}

// takeMetadata removes the top-level sops entries of every document and
// returns the first document's, as SOPS reads a file of several.
func takeMetadata(branches []sopsMap) (sopsMap, error) {
	var meta sopsMap
	found := false
	for i, b := range branches {
		kept := b[:0]
		for _, item := range b {
			if item.key != sopsMetadataKey {
				kept = append(kept, item)
				continue
			}
			if i > 0 {
				continue
			}
			if found {
				return nil, errors.New("two sops entries")
			}
			m, ok := item.value.(sopsMap)
			if !ok {
				return nil, errors.New("a sops entry that is no mapping")
			}
			meta, found = m, true
		}
		branches[i] = kept
	}
	if !found {
		return nil, errNoSOPSMetadata
	}
	return meta, nil
}

// Opened is a SOPS file decrypted.
type Opened struct {
	// Plain is the file in clear, in its own format.
	Plain []byte
	// Values are the plaintext values the file held, for redaction.
	Values []string
}

// Open decrypts data, the content of file (as errors name it), with keys.
// It returns nil for data that is no SOPS file. Every failure is a
// *RenderError naming file, whose message never holds a decrypted value.
func Open(file string, data []byte, keys *Keys) (*Opened, error) {
	format := sopsFormatFor(file, data)
	if format == nil {
		return nil, nil
	}
	branches, meta, err := loadSOPS(format, data)
	if errors.Is(err, errNoSOPSMetadata) {
		return nil, nil
	}
	if err != nil {
		return nil, decryptError(file, v1alpha1.ReasonDecryptionFailed, fmt.Errorf("not a valid SOPS file: %w", err))
	}
	key, err := dataKey(meta, keys)
	if err != nil {
		return nil, decryptError(file, v1alpha1.ReasonDecryptionFailed, fmt.Errorf("%w (it is encrypted for %s)", errNoMatchingKey, recipients(meta)))
	}
	encrypted := encryptedLeaves(branches)
	mac, err := decryptTree(branches, key, meta)
	if errors.Is(err, errSOPSTooDeep) {
		return nil, decryptError(file, v1alpha1.ReasonDecryptionFailed, fmt.Errorf("not a valid SOPS file: %w", err))
	}
	if err != nil {
		// AES-GCM refused a value: it was changed after it was encrypted.
		return nil, decryptError(file, v1alpha1.ReasonDecryptionTampered, errors.New("a value does not decrypt with the file's data key: the file was changed after it was encrypted"))
	}
	stored, err := decryptValue(meta.mac, key, meta.lastModified.Format(time.RFC3339))
	if err != nil || stored != any(mac) {
		return nil, decryptError(file, v1alpha1.ReasonDecryptionTampered, errors.New("MAC mismatch: the file's content is not what was encrypted (changed, added or removed values)"))
	}
	plain, err := format.emit(branches)
	if err != nil {
		return nil, decryptError(file, v1alpha1.ReasonDecryptionFailed, errors.New("the decrypted content cannot be written in the file's format"))
	}
	return &Opened{Plain: plain, Values: plainValues(branches, encrypted)}, nil
}

func decryptError(file, reason string, err error) *result.RenderError {
	return &result.RenderError{File: file, Reason: reason, Err: err}
}

// maxRecipientsNamed bounds the master keys an error names.
const maxRecipientsNamed = 5

// recipients names the master keys a file is encrypted for (public: age
// recipients and OpenPGP fingerprints), so that a user sees which key is missing.
func recipients(m *sopsMetadata) string {
	var names []string
	for _, group := range m.groups {
		for _, k := range group {
			names = append(names, k.kind+" "+k.id)
		}
	}
	switch {
	case len(names) == 0:
		return "no master key"
	case len(names) > maxRecipientsNamed:
		return strings.Join(names[:maxRecipientsNamed], ", ") + fmt.Sprintf(" and %d more", len(names)-maxRecipientsNamed)
	}
	return strings.Join(names, ", ")
}

// encryptedLeaves marks, in the order leaves walks them, the values of an
// encrypted tree that SOPS encrypted (left in clear: keys, and values outside
// its encrypted_regex or with its unencrypted suffix).
func encryptedLeaves(branches []sopsMap) []bool {
	var out []bool
	for _, v := range leaves(branches) {
		s, ok := v.(string)
		out = append(out, ok && strings.HasPrefix(s, "ENC["))
	}
	return out
}

// plainValues lists the decrypted values of a tree that were encrypted, as
// text: what no message may show.
func plainValues(branches []sopsMap, encrypted []bool) []string {
	var out []string
	for i, v := range leaves(branches) {
		if i >= len(encrypted) || !encrypted[i] {
			continue
		}
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case []byte:
			out = append(out, string(v))
		case sopsComment:
			out = append(out, v.text)
		default:
			out = append(out, fmt.Sprint(v))
		}
	}
	return out
}

// leaves returns the values of a tree's branches, depth first in order.
func leaves(branches []sopsMap) []any {
	var out []any
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case sopsMap:
			for _, item := range v {
				walk(item.value)
			}
		case []any:
			for _, item := range v {
				walk(item)
			}
		default:
			out = append(out, v)
		}
	}
	for _, b := range branches {
		walk(b)
	}
	return out
}
