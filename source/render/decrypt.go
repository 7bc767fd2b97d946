package render

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/result"
	"tether.dev/tether/source/sops"
)

// decryptingFS serves the SOPS files of a render decrypted, and the rest as
// they are: every reader of the render (the plain directory's manifests,
// kustomize's resources, and the files its secretGenerators read) sees the
// plaintext, which exists only in this render's memory. A file is decrypted at
// its first read and kept for the render's later reads.
//
// With RequireEncryption, it also refuses a Secret manifest that is no SOPS
// file, and a kustomization whose secretGenerator holds literals or reads a
// file that is no SOPS file.
type decryptingFS struct {
	filesys.FileSystem
	dec *sops.Decryption
	rel func(string) string
	// maxNodes is the render's YAML node bound per file: a file over it is
	// refused by the node budget, and is not parsed here first.
	maxNodes int
	plain    map[string][]byte
	// values are the plaintext values of every file decrypted, which no error
	// message may hold (see redact).
	values []string
	// decrypted holds every value and every file's plaintext decrypted, which
	// a Secret's values must come from under RequireEncryption
	// (CheckRenderedSecrets).
	decrypted map[string]bool
	// err keeps the first failure, which kustomize may have wrapped beyond
	// recognition.
	err *result.RenderError
}

func newDecryptingFS(fs filesys.FileSystem, dec *sops.Decryption, rel func(string) string, maxNodes int) *decryptingFS {
	return &decryptingFS{FileSystem: fs, dec: dec, rel: rel, maxNodes: maxNodes, plain: map[string][]byte{}, decrypted: map[string]bool{}}
}

func (f *decryptingFS) ReadFile(name string) ([]byte, error) {
	if data, ok := f.plain[name]; ok {
		return data, nil
	}
	data, err := f.FileSystem.ReadFile(name)
	if err != nil {
		return nil, err
	}
	if err := f.check(name, data); err != nil {
		return nil, f.fail(err)
	}
	o, err := sops.Open(f.rel(name), data, f.dec.Keys)
	if err != nil {
		return nil, f.fail(err)
	}
	if o == nil {
		return data, nil
	}
	f.values = append(f.values, o.Values...)
	f.plain[name] = o.Plain
	f.decrypted[string(o.Plain)] = true
	for _, v := range o.Values {
		f.decrypted[v] = true
	}
	return o.Plain, nil
}

func (f *decryptingFS) fail(err error) error {
	var re *result.RenderError
	if !errors.As(err, &re) {
		re = &result.RenderError{File: "", Err: err}
	}
	if f.err == nil {
		f.err = re
	}
	return f.err
}

// isSOPS reports whether the file name carries SOPS's metadata.
func (f *decryptingFS) isSOPS(name string) bool {
	data, err := f.FileSystem.ReadFile(name)
	return err == nil && sops.IsFile(name, data)
}

// check applies RequireEncryption to a file before it is decrypted.
func (f *decryptingFS) check(name string, data []byte) error {
	if !f.dec.RequireEncryption || sops.IsFile(name, data) {
		return nil
	}
	if isKustomization(name) {
		return f.checkGenerators(name, data)
	}
	if bytes.Contains(data, []byte("Secret")) && f.holdsSecret(data) {
		return &result.RenderError{File: f.rel(name), Reason: v1alpha1.ReasonUnencryptedSecret,
			Err: errors.New("holds a Secret that is not encrypted with SOPS, and spec.decryption.requireEncryption is true")}
	}
	return nil
}

func isKustomization(name string) bool {
	base := filepath.Base(name)
	for _, k := range kustomizationFiles {
		if base == k {
			return true
		}
	}
	return false
}

// holdsSecret reports whether a YAML or JSON stream holds a core Secret,
// reading each document's top-level apiVersion and kind only. A stream that
// does not parse holds none as far as this check goes: rendering reports it.
func (f *decryptingFS) holdsSecret(data []byte) bool {
	if YAMLNodeBound(data) > f.maxNodes {
		return false // the node budget refuses the file
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return false // io.EOF, or not YAML
		}
		if isSecretDocument(&doc) {
			return true
		}
	}
}

// isSecretDocument reports whether a document is a mapping with apiVersion v1
// and kind Secret, or a List holding one.
func isSecretDocument(doc *yaml.Node) bool {
	m := doc
	if m.Kind == yaml.DocumentNode && len(m.Content) == 1 {
		m = m.Content[0]
	}
	if m.Kind != yaml.MappingNode {
		return false
	}
	var apiVersion, kind string
	var items *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		switch m.Content[i].Value {
		case "apiVersion":
			apiVersion = m.Content[i+1].Value
		case "kind":
			kind = m.Content[i+1].Value
		case "items":
			items = m.Content[i+1]
		}
	}
	if apiVersion == "v1" && kind == "Secret" {
		return true
	}
	if strings.HasSuffix(kind, "List") && items != nil && items.Kind == yaml.SequenceNode {
		for _, item := range items.Content {
			if isSecretDocument(item) {
				return true
			}
		}
	}
	return false
}

// checkGenerators refuses a kustomization whose secretGenerator puts
// plaintext from git into a Secret: literals, or a file or env file that is
// no SOPS file.
func (f *decryptingFS) checkGenerators(name string, data []byte) error {
	k, err := decodeKustomization(data)
	if err != nil {
		return nil // kustomize reports it
	}
	dir := filepath.Dir(name)
	for i, g := range k.SecretGenerator {
		field := fmt.Sprintf("secretGenerator[%d] (%s)", i, g.Name)
		if len(g.LiteralSources) > 0 {
			return f.unencrypted(name, field+" has literals")
		}
		sources := append(append([]string{}, g.FileSources...), g.EnvSources...)
		if g.EnvSource != "" { // the older, singular form of envs
			sources = append(sources, g.EnvSource)
		}
		for _, src := range sources {
			_, p, found := strings.Cut(src, "=")
			if !found {
				p = src
			}
			if !f.isSOPS(filepath.Join(dir, p)) {
				return f.unencrypted(name, fmt.Sprintf("%s reads %s, which is not encrypted with SOPS", field, p))
			}
		}
	}
	return nil
}

func (f *decryptingFS) unencrypted(name, what string) error {
	return &result.RenderError{File: f.rel(name), Reason: v1alpha1.ReasonUnencryptedSecret,
		Err: fmt.Errorf("%s, and spec.decryption.requireEncryption is true", what)}
}

// redacted is what stands in an error message for a decrypted value.
const redacted = "[redacted]"

// minRedacted is the shortest value redacted: shorter ones would blank out
// words of the message, and give little away.
const minRedacted = 4

// redact returns err with every decrypted value (and its base64 form, as a
// Secret's data holds it) taken out of its message: a kustomize or YAML error
// about a decrypted file may quote it. A decryption failure is returned as
// it is (its message holds no value), and an error that quotes no value keeps
// its types.
func (f *decryptingFS) redact(err error) error {
	if err == nil {
		return nil
	}
	if f.err != nil {
		return f.err
	}
	if len(f.values) == 0 {
		return err
	}
	return redactIn(err, f.values)
}

// redactIn returns err with every one of values (and its base64 form, as a
// Secret's data holds it) taken out of its message; an error that quotes none
// keeps its types.
func redactIn(err error, values []string) error {
	var re *result.RenderError
	if !errors.As(err, &re) {
		re = &result.RenderError{Err: err}
	}
	msg := re.Err.Error()
	clean := msg
	// Longest first: a value inside another is taken out after it.
	values = slices.Clone(values)
	slices.SortFunc(values, func(a, b string) int { return len(b) - len(a) })
	for _, v := range values {
		if len(v) < minRedacted {
			continue
		}
		clean = strings.ReplaceAll(clean, v, redacted)
		clean = strings.ReplaceAll(clean, base64.StdEncoding.EncodeToString([]byte(v)), redacted)
	}
	if clean == msg {
		return err
	}
	return &result.RenderError{File: re.File, Reason: re.Reason, Err: errors.New(clean)}
}
