package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/plan"
	"tether.dev/tether/source"
)

// maxKeyFile bounds one key file --keys reads.
const maxKeyFile = 1 << 20

// decryptFlags are how `tether render` and `tether diff` decrypt SOPS files:
// locally, with keys of the user's own, as the agent decrypts with a Sync's.
type decryptFlags struct {
	decrypt bool
	keys    string
}

func (d *decryptFlags) bind(fl *pflag.FlagSet) {
	fl.BoolVar(&d.decrypt, "decrypt", false, "Decrypt SOPS-encrypted files with the keys of --keys, as the agent decrypts them with a Sync's spec.decryption.")
	fl.StringVar(&d.keys, "keys", "", "A directory of private keys for --decrypt, named as in a keys Secret: *.agekey (age identities) and *.asc (armored OpenPGP keys).")
}

// misuse says what is wrong with the flags, or "" when nothing is.
func (d *decryptFlags) misuse() string {
	switch {
	case d.decrypt && d.keys == "":
		return "--decrypt needs --keys DIR"
	case !d.decrypt && d.keys != "":
		return "--keys goes with --decrypt"
	}
	return ""
}

// decryption reads the keys of --keys; nil without --decrypt.
func (d *decryptFlags) decryption() (*source.Decryption, error) {
	if !d.decrypt {
		return nil, nil
	}
	keys, err := readKeysDir(d.keys)
	if err != nil {
		return nil, fmt.Errorf("--keys %s: %w", d.keys, err)
	}
	return &source.Decryption{Keys: keys}, nil
}

// readKeysDir reads the *.agekey and *.asc files of dir, as the agent reads a
// keys Secret's entries.
func readKeysDir(dir string) (*source.Keys, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{}
	for _, e := range entries {
		name := e.Name()
		isKey := strings.HasSuffix(name, source.AgeKeySuffix) || strings.HasSuffix(name, source.PGPKeySuffix)
		if !e.Type().IsRegular() || !isKey {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		if info.Size() > maxKeyFile {
			return nil, fmt.Errorf("%s: larger than %d bytes, no key file", name, maxKeyFile)
		}
		if data[name], err = os.ReadFile(filepath.Join(dir, name)); err != nil {
			return nil, err
		}
	}
	keys, err := source.ParseKeys(data)
	if errors.Is(err, source.ErrNoKeys) {
		return nil, errors.New("no *" + source.AgeKeySuffix + " or *" + source.PGPKeySuffix + " file")
	}
	return keys, err
}

// maskSecrets replaces every value of the Secrets among objs with a marker, so
// that printing them shows which keys they hold and nothing of their values.
func maskSecrets(objs []*unstructured.Unstructured) {
	for _, o := range objs {
		if o.GroupVersionKind().Group != "" || o.GetKind() != "Secret" {
			continue
		}
		// The same object on both sides: every value is unchanged, so each is
		// the bare marker.
		plan.MaskSecret(o, o)
	}
}
