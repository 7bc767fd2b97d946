package sops

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// sopsMetadataKey is the top-level key of SOPS's metadata in YAML and JSON
// files; dotenv files hold it flattened, each entry prefixed sopsMetadataKey_.
const sopsMetadataKey = "sops"

// errNoSOPSMetadata is a file without SOPS's metadata: no SOPS file.
var errNoSOPSMetadata = errors.New("no SOPS metadata")

// sopsMetadata is what a SOPS file says about its encryption.
type sopsMetadata struct {
	lastModified time.Time
	// mac is the file's MAC, encrypted with the data key.
	mac              string
	rules            *encryptionRules
	macOnlyEncrypted bool
	// groups are the file's key groups: one, or several whose data key parts
	// combine by Shamir's secret sharing, shamirThreshold of them at least.
	groups          [][]masterKey
	shamirThreshold int
}

// masterKey is one copy of a file's data key (or of its part, with several
// key groups), encrypted for a master key.
type masterKey struct {
	// kind is SOPS's name of the key type: age, pgp, kms, gcp_kms, hckms,
	// azure_kv, hc_vault.
	kind string
	// id names the key: an age recipient, an OpenPGP fingerprint, a KMS ARN…
	id  string
	enc string
}

// The key types SOPS writes, in the order it reads them into a key group.
var masterKeyKinds = []struct {
	kind string
	// name makes the key's public name from its entry.
	name func(entry map[string]any) string
	// dated kinds carry a created_at that must be a time.
	dated bool
}{
	{"kms", func(e map[string]any) string { return joinNonEmpty(metaString(e["arn"]), "+", metaString(e["role"])) }, true},
	{"gcp_kms", func(e map[string]any) string { return metaString(e["resource_id"]) }, true},
	{"hckms", func(e map[string]any) string { return metaString(e["key_id"]) }, true},
	{"azure_kv", func(e map[string]any) string {
		return metaString(e["vault_url"]) + "/keys/" + metaString(e["name"]) + "/" + metaString(e["version"])
	}, true},
	{"hc_vault", func(e map[string]any) string {
		return metaString(e["vault_address"]) + "/v1/" + metaString(e["engine_path"]) + "/keys/" + metaString(e["key_name"])
	}, true},
	{"pgp", func(e map[string]any) string { return metaString(e["fp"]) }, true},
	{"age", func(e map[string]any) string { return metaString(e["recipient"]) }, false},
}

func joinNonEmpty(a, sep, b string) string {
	if b == "" {
		return a
	}
	return a + sep + b
}

// parseSOPSMetadata reads the metadata mapping of a file. What SOPS would
// refuse is refused: no keys, a lastmodified that is no time, more than one
// encryption rule.
func parseSOPSMetadata(tree sopsMap) (*sopsMetadata, error) {
	m, err := plainMap(tree, 0)
	if err != nil {
		return nil, err
	}
	meta := &sopsMetadata{}
	if meta.lastModified, err = time.Parse(time.RFC3339, metaString(m["lastmodified"])); err != nil {
		return nil, errors.New("sops.lastmodified is no RFC 3339 time")
	}
	meta.mac = metaString(m["mac"])
	if meta.macOnlyEncrypted, err = metaBool(m["mac_only_encrypted"]); err != nil {
		return nil, fmt.Errorf("sops.mac_only_encrypted: %w", err)
	}
	if meta.shamirThreshold, err = metaInt(m["shamir_threshold"]); err != nil {
		return nil, fmt.Errorf("sops.shamir_threshold: %w", err)
	}
	if meta.rules, err = parseEncryptionRules(m); err != nil {
		return nil, err
	}
	if meta.groups, err = parseKeyGroups(m); err != nil {
		return nil, err
	}
	return meta, nil
}

// parseEncryptionRules reads the file's rule of which values are encrypted.
func parseEncryptionRules(m map[string]any) (*encryptionRules, error) {
	r := &encryptionRules{}
	named := 0
	text := func(key string) string {
		s := metaString(m[key])
		if s != "" {
			named++
		}
		return s
	}
	compile := func(key string) (*regexp.Regexp, bool) {
		s := text(key)
		if s == "" {
			return nil, false
		}
		re, err := regexp.Compile(s)
		if err != nil {
			return nil, true // matches nothing, as in SOPS
		}
		return re, true
	}
	r.unencryptedSuffix = text("unencrypted_suffix")
	r.encryptedSuffix = text("encrypted_suffix")
	r.unencryptedRegex, r.hasUnencryptedRegex = compile("unencrypted_regex")
	r.encryptedRegex, r.hasEncryptedRegex = compile("encrypted_regex")
	r.unencryptedCommentRegex, r.hasUnencryptedCommentRegex = compile("unencrypted_comment_regex")
	r.encryptedCommentRegex, r.hasEncryptedCommentRegex = compile("encrypted_comment_regex")
	switch {
	case named > 1:
		return nil, errors.New("more than one of encrypted_suffix, unencrypted_suffix, encrypted_regex, unencrypted_regex, encrypted_comment_regex and unencrypted_comment_regex")
	case named == 0:
		r.unencryptedSuffix = "_unencrypted"
	}
	return r, nil
}

// parseKeyGroups reads the master keys: the keys at the top of the metadata
// are one group; without them, key_groups lists the groups.
func parseKeyGroups(m map[string]any) ([][]masterKey, error) {
	top, err := keyGroup(m)
	if err != nil {
		return nil, err
	}
	if len(top) > 0 {
		return [][]masterKey{top}, nil
	}
	groups, err := metaList(m["key_groups"])
	if err != nil {
		return nil, fmt.Errorf("sops.key_groups: %w", err)
	}
	var out [][]masterKey
	for i, g := range groups {
		gm, ok := g.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("sops.key_groups[%d] is no mapping", i)
		}
		group, err := keyGroup(gm)
		if err != nil {
			return nil, err
		}
		out = append(out, group)
	}
	if len(out) == 0 {
		return nil, errors.New("no master keys")
	}
	return out, nil
}

// keyGroup reads the master keys of one group, by kind.
func keyGroup(m map[string]any) ([]masterKey, error) {
	var group []masterKey
	for _, k := range masterKeyKinds {
		entries, err := metaList(m[k.kind])
		if err != nil {
			return nil, fmt.Errorf("sops %s keys: %w", k.kind, err)
		}
		for _, e := range entries {
			entry, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("a sops %s key is no mapping", k.kind)
			}
			if _, err := time.Parse(time.RFC3339, metaString(entry["created_at"])); k.dated && err != nil {
				return nil, fmt.Errorf("a sops %s key's created_at is no RFC 3339 time", k.kind)
			}
			group = append(group, masterKey{kind: k.kind, id: k.name(entry), enc: metaString(entry["enc"])})
		}
	}
	return group, nil
}

// plainMap turns a mapping of the tree into a Go map, comments left out.
func plainMap(tree sopsMap, depth int) (map[string]any, error) {
	if depth > maxSOPSDepth {
		return nil, errSOPSTooDeep
	}
	out := make(map[string]any, len(tree))
	for _, item := range tree {
		if _, ok := item.key.(sopsComment); ok {
			continue
		}
		key, ok := item.key.(string)
		if !ok {
			return nil, errors.New("a metadata key is no string")
		}
		v, err := plainValue(item.value, depth+1)
		if err != nil {
			return nil, err
		}
		out[key] = v
	}
	return out, nil
}

func plainValue(v any, depth int) (any, error) {
	switch v := v.(type) {
	case sopsMap:
		return plainMap(v, depth)
	case []any:
		out := make([]any, 0, len(v))
		for _, item := range v {
			if _, ok := item.(sopsComment); ok {
				continue
			}
			pv, err := plainValue(item, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, pv)
		}
		return out, nil
	}
	return v, nil
}

// The metadata is read leniently, as SOPS reads it: a dotenv file holds
// every entry as text.

func metaString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int:
		return strconv.Itoa(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		if v {
			return "1"
		}
		return "0"
	}
	return ""
}

func metaInt(v any) (int, error) {
	switch v := v.(type) {
	case nil:
		return 0, nil
	case int:
		return v, nil
	case float64:
		return int(v), nil
	case bool:
		if v {
			return 1, nil
		}
		return 0, nil
	case string:
		if v == "" {
			return 0, nil
		}
		n, err := strconv.ParseInt(v, 0, 0)
		if err != nil {
			return 0, errors.New("not a number")
		}
		return int(n), nil
	}
	return 0, errors.New("not a number")
}

func metaBool(v any) (bool, error) {
	switch v := v.(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	case int:
		return v != 0, nil
	case float64:
		return v != 0, nil
	case string:
		if v == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, errors.New("not a boolean")
		}
		return b, nil
	}
	return false, errors.New("not a boolean")
}

func metaList(v any) ([]any, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case []any:
		return v, nil
	}
	return nil, errors.New("not a list")
}
