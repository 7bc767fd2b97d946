package sops

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// sopsValue is SOPS's format of an encrypted value: AES-256-GCM, the
// ciphertext, nonce and tag in base64, and the type the plaintext was.
var sopsValue = regexp.MustCompile(`^ENC\[AES256_GCM,data:(.+),iv:(.+),tag:(.+),type:(.+)\]`)

// errNotSOPSValue is a value that should be encrypted and is not in SOPS's format.
var errNotSOPSValue = errors.New("a value is not in SOPS's encrypted format")

// decryptValue decrypts one value of a SOPS file with the data key and the
// additional data it was sealed with (its path, or the file's lastmodified for
// the MAC), and returns it as the type it was: string, int, float64, bool,
// []byte, time.Time, or a sopsComment. SOPS leaves an empty value empty.
func decryptValue(value string, key []byte, aad string) (any, error) {
	if value == "" {
		return "", nil
	}
	m := sopsValue.FindStringSubmatch(value)
	if m == nil {
		return nil, errNotSOPSValue
	}
	var parts [3][]byte
	for i := range parts {
		b, err := base64.StdEncoding.DecodeString(m[i+1])
		if err != nil {
			return nil, errNotSOPSValue
		}
		parts[i] = b
	}
	data, iv, tag := parts[0], parts[1], parts[2]
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("the data key: %w", err)
	}
	if len(iv) == 0 {
		return nil, errNotSOPSValue
	}
	gcm, err := cipher.NewGCMWithNonceSize(block, len(iv))
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, iv, append(data, tag...), []byte(aad))
	if err != nil {
		return nil, errors.New("a value does not authenticate")
	}
	return typedValue(m[4], plain)
}

// typedValue reads a decrypted value as its SOPS type says.
func typedValue(typ string, plain []byte) (any, error) {
	s := string(plain)
	switch typ {
	case "str":
		return s, nil
	case "int":
		return strconv.Atoi(s)
	case "float":
		return strconv.ParseFloat(s, 64)
	case "bool":
		return strconv.ParseBool(s)
	case "bytes":
		return plain, nil
	case "time":
		var t time.Time
		err := t.UnmarshalText(plain)
		return t, err
	case "comment":
		return sopsComment{text: s}, nil
	}
	return nil, fmt.Errorf("an encrypted value of unknown type %q", typ)
}
