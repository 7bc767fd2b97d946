package render

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/result"
)

// CheckRenderedSecrets applies spec.decryption.requireEncryption to what a
// render made, whatever made it (a manifest, a kustomize patch or generator, a
// chart's template): every value of every Secret must be one that came out of
// a SOPS file this render decrypted, a decrypted value or a decrypted file
// whole. The checks on files before they are read (decryptingFS.check) name
// the file at fault; this one decides, on the objects themselves, so that no
// spelling of a Secret in a file gets past it. Empty values hold nothing and
// pass.
func CheckRenderedSecrets(objs []*unstructured.Unstructured, decrypted map[string]bool, dir string) error {
	for _, o := range objs {
		if o.GetKind() != "Secret" || o.GetAPIVersion() != "v1" {
			continue
		}
		if field := plaintextField(o, decrypted); field != "" {
			return &result.RenderError{File: dir, Reason: v1alpha1.ReasonUnencryptedSecret,
				Err: fmt.Errorf("Secret %s/%s: %s does not come from a file encrypted with SOPS, and spec.decryption.requireEncryption is true", o.GetNamespace(), o.GetName(), field)}
		}
	}
	return nil
}

// plaintextField is the first field of Secret o whose value no decrypted SOPS
// file gave, or "".
func plaintextField(o *unstructured.Unstructured, decrypted map[string]bool) string {
	for _, section := range []string{"data", "stringData"} {
		m, _ := o.Object[section].(map[string]any)
		for _, key := range slices.Sorted(maps.Keys(m)) {
			s, ok := m[key].(string)
			if !ok {
				return section + "." + key
			}
			if section == "data" {
				plain, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					return section + "." + key
				}
				s = string(plain)
			}
			if s != "" && !decrypted[s] {
				return section + "." + key
			}
		}
	}
	return ""
}

// CheckOverlaySecrets holds spec.kustomize to requireEncryption: the objects
// an overlay returned (after) may hold, in their Secrets, only values the
// render's Secrets held (before), which the render checked came from
// decrypted SOPS files. A component of the repository or a patch that adds a
// value is refused as CheckRenderedSecrets refuses it, naming the Secret and
// the field, never the value.
func CheckOverlaySecrets(before, after []*unstructured.Unstructured, dir string) error {
	given := map[string]bool{}
	for _, o := range before {
		if o.GetKind() != "Secret" || o.GetAPIVersion() != "v1" {
			continue
		}
		for _, section := range []string{"data", "stringData"} {
			m, _ := o.Object[section].(map[string]any)
			for _, v := range m {
				s, _ := v.(string)
				if section == "data" {
					plain, err := base64.StdEncoding.DecodeString(s)
					if err != nil {
						continue
					}
					s = string(plain)
				}
				given[s] = true
			}
		}
	}
	if err := CheckRenderedSecrets(after, given, dir); err != nil {
		return fmt.Errorf("spec.kustomize: %w", err)
	}
	return nil
}
