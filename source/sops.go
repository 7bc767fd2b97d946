package source

import "tether.dev/tether/source/sops"

// How a render decrypts SOPS files (package sops), under the names the callers
// of source know.
type (
	// Decryption is how a render decrypts the SOPS files it reads: with the keys
	// of one Sync, and nothing else.
	Decryption = sops.Decryption
	// Keys are the private keys that decrypt one Sync's SOPS files.
	Keys = sops.Keys
)

// Names of the entries of a keys Secret that hold keys.
const (
	AgeKeySuffix = sops.AgeKeySuffix
	PGPKeySuffix = sops.PGPKeySuffix
)

// ErrNoKeys is returned by ParseKeys for entries that hold no key.
var ErrNoKeys = sops.ErrNoKeys

// ParseKeys reads the keys of a keys Secret's data (sops.ParseKeys).
func ParseKeys(data map[string][]byte) (*Keys, error) { return sops.ParseKeys(data) }
