package source

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keyservice"
	"github.com/getsops/sops/v3/stores/dotenv"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"

	"tether.dev/tether/api/v1alpha1"
)

// sopsStore reads and writes one format of SOPS file.
type sopsStore interface {
	LoadEncryptedFile(in []byte) (sops.Tree, error)
	EmitPlainFile(in sops.TreeBranches) ([]byte, error)
}

// SOPS's metadata, as each format writes it: a file is taken for a SOPS file by
// it, never by its name. The name only says which format to read it in, as it
// does for the sops CLI.
var (
	yamlMetadata   = regexp.MustCompile(`(?m)^sops:`)
	dotenvMetadata = regexp.MustCompile(`(?m)^sops_mac=`)
	jsonMetadata   = []byte(`"sops"`)
)

// sopsStoreFor returns the store that reads data, the content of the file
// name, when data carries SOPS's metadata; nil when it does not. A .yaml or .yml
// file is read as YAML, .json as JSON, .env as dotenv, and any other file as
// SOPS writes a binary file (a JSON document whose data holds the content).
func sopsStoreFor(name string, data []byte) sopsStore {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml":
		if yamlMetadata.Match(data) {
			return sopsyaml.NewStore(&config.YAMLStoreConfig{})
		}
	case ".json":
		if bytes.Contains(data, jsonMetadata) {
			return sopsjson.NewStore(&config.JSONStoreConfig{})
		}
	case ".env":
		if dotenvMetadata.Match(data) {
			return dotenv.NewStore(&config.DotenvStoreConfig{})
		}
	default:
		if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) && bytes.Contains(data, jsonMetadata) {
			return sopsjson.NewBinaryStore(&config.JSONBinaryStoreConfig{})
		}
	}
	return nil
}

// opened is a SOPS file decrypted.
type opened struct {
	plain []byte
	// values are the plaintext values the file held, for redaction.
	values []string
}

// openSOPS decrypts data, the content of file (as errors name it), with keys.
// It returns nil for data that is no SOPS file. Every failure is a
// *RenderError naming file, whose message never holds a decrypted value.
func openSOPS(file string, data []byte, keys *Keys) (*opened, error) {
	store := sopsStoreFor(file, data)
	if store == nil {
		return nil, nil
	}
	tree, err := store.LoadEncryptedFile(data)
	if errors.Is(err, sops.MetadataNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, decryptError(file, v1alpha1.ReasonDecryptionFailed, fmt.Errorf("not a valid SOPS file: %w", err))
	}
	dataKey, err := tree.Metadata.GetDataKeyWithKeyServices(
		[]keyservice.KeyServiceClient{keyservice.NewCustomLocalClient(keyServer{keys: keys})}, sops.DefaultDecryptionOrder)
	if err != nil {
		return nil, decryptError(file, v1alpha1.ReasonDecryptionFailed, fmt.Errorf("%w (it is encrypted for %s)", errNoMatchingKey, recipients(tree.Metadata)))
	}
	encrypted := encryptedLeaves(tree.Branches)
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(dataKey, cipher)
	if err != nil {
		// AES-GCM refused a value: it was changed after it was encrypted.
		return nil, decryptError(file, v1alpha1.ReasonDecryptionTampered, errors.New("a value does not decrypt with the file's data key: the file was changed after it was encrypted"))
	}
	stored, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil || stored != mac {
		return nil, decryptError(file, v1alpha1.ReasonDecryptionTampered, errors.New("MAC mismatch: the file's content is not what was encrypted (changed, added or removed values)"))
	}
	plain, err := store.EmitPlainFile(tree.Branches)
	if err != nil {
		return nil, decryptError(file, v1alpha1.ReasonDecryptionFailed, errors.New("the decrypted content cannot be written in the file's format"))
	}
	return &opened{plain: plain, values: plainValues(tree.Branches, encrypted)}, nil
}

func decryptError(file, reason string, err error) *RenderError {
	return &RenderError{File: file, Reason: reason, Err: err}
}

// maxRecipientsNamed bounds the master keys an error names.
const maxRecipientsNamed = 5

// recipients names the master keys a file is encrypted for (public: age
// recipients and OpenPGP fingerprints), so that a user sees which key is missing.
func recipients(m sops.Metadata) string {
	var names []string
	for _, group := range m.KeyGroups {
		for _, k := range group {
			names = append(names, k.TypeToIdentifier()+" "+k.ToString())
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
func encryptedLeaves(branches sops.TreeBranches) []bool {
	var out []bool
	for _, v := range leaves(branches) {
		s, ok := v.(string)
		out = append(out, ok && strings.HasPrefix(s, "ENC["))
	}
	return out
}

// plainValues lists the decrypted values of a tree that were encrypted, as
// text: what no message may show.
func plainValues(branches sops.TreeBranches, encrypted []bool) []string {
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
		default:
			out = append(out, fmt.Sprint(v))
		}
	}
	return out
}

// leaves returns the values of a tree's branches, depth first in order.
func leaves(branches sops.TreeBranches) []any {
	var out []any
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case sops.TreeBranch:
			for _, item := range v {
				walk(item.Value)
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
