package sops

import (
	"errors"
	"fmt"
)

// dataKey recovers a file's data key with the Sync's keys: from each key
// group, the copy the first key that opens it holds (age keys tried first,
// then OpenPGP; other kinds are never opened); with several groups, the
// parts of at least shamirThreshold groups combined.
func dataKey(meta *sopsMetadata, keys *Keys) ([]byte, error) {
	var parts [][]byte
	for _, group := range meta.groups {
		if part, err := openGroup(group, keys); err == nil {
			parts = append(parts, part)
		}
	}
	if len(meta.groups) == 1 {
		if len(parts) != 1 {
			return nil, errNoMatchingKey
		}
		return parts[0], nil
	}
	if len(parts) == 0 || len(parts) < meta.shamirThreshold {
		return nil, errNoMatchingKey
	}
	key, err := combineShares(parts)
	if err != nil {
		return nil, fmt.Errorf("the key groups' parts do not combine: %w", err)
	}
	return key, nil
}

// openGroup opens one key group's copy of the data key (or of its part).
func openGroup(group []masterKey, keys *Keys) ([]byte, error) {
	for _, kind := range []string{"age", "pgp"} {
		for _, k := range group {
			if k.kind != kind {
				continue
			}
			var part []byte
			var err error
			if kind == "age" {
				part, err = keys.openAge([]byte(k.enc))
			} else {
				part, err = keys.openPGP([]byte(k.enc))
			}
			if err == nil {
				return part, nil
			}
		}
	}
	return nil, errNoMatchingKey
}

// combineShares recovers a secret split by Shamir's secret sharing as SOPS
// splits a data key: each share is the secret's length of y bytes followed by
// its x, over GF(2⁸) with the AES polynomial. The secret is the polynomial
// through the shares, at x = 0, byte by byte.
func combineShares(shares [][]byte) ([]byte, error) {
	if len(shares) < 2 {
		return nil, errors.New("fewer than two parts")
	}
	n := len(shares[0])
	if n < 2 {
		return nil, errors.New("a part shorter than two bytes")
	}
	xs := make([]byte, len(shares))
	seen := map[byte]bool{}
	for i, s := range shares {
		if len(s) != n {
			return nil, errors.New("parts of different lengths")
		}
		x := s[n-1]
		if seen[x] {
			return nil, errors.New("a part given twice")
		}
		seen[x] = true
		xs[i] = x
	}
	// The Lagrange basis polynomial of each share, at 0.
	basis := make([]byte, len(shares))
	for i := range shares {
		basis[i] = 1
		for j := range shares {
			if i != j {
				basis[i] = gfMul(basis[i], gfDiv(xs[j], xs[i]^xs[j]))
			}
		}
	}
	secret := make([]byte, n-1)
	for b := range secret {
		for i, s := range shares {
			secret[b] ^= gfMul(s[b], basis[i])
		}
	}
	return secret, nil
}

// gfMul multiplies in GF(2⁸) modulo x⁸+x⁴+x³+x+1.
func gfMul(a, b byte) byte {
	var p byte
	for b != 0 {
		if b&1 != 0 {
			p ^= a
		}
		carry := a & 0x80
		a <<= 1
		if carry != 0 {
			a ^= 0x1b
		}
		b >>= 1
	}
	return p
}

// gfDiv divides in GF(2⁸): a times b's inverse, b²⁵⁴ (b is never 0 here),
// by square and multiply.
func gfDiv(a, b byte) byte {
	inv, sq := byte(1), b
	for e := 254; e > 0; e >>= 1 {
		if e&1 != 0 {
			inv = gfMul(inv, sq)
		}
		sq = gfMul(sq, sq)
	}
	return gfMul(a, inv)
}
