package sops

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"tether.dev/tether/test/sopstools"
)

func TestSOPSFilesOpenWithAnyOfTheirRecipients(t *testing.T) {
	tools := sopstools.Find(t)
	id1, r1 := tools.AgeKey(t)
	id2, r2 := tools.AgeKey(t)
	id3, _ := tools.AgeKey(t)
	plain := "a: b\nc: [1, 2]\n"
	enc := tools.EncryptAge(t, "two.yaml", plain, []string{r1, r2})
	want := tools.Decrypt(t, "two.yaml", enc, id1)
	for _, c := range []struct {
		step string
		ids  []string
		ok   bool
	}{
		{"the first recipient's key", []string{id1}, true},
		{"the second recipient's key", []string{id2}, true},
		{"another key beside the second's", []string{id3, id2}, true},
		{"another key alone", []string{id3}, false},
	} {
		t.Run(c.step, func(t *testing.T) {
			o, err := Open("two.yaml", []byte(enc), agentKeys(t, c.ids...))
			switch {
			case !c.ok && err == nil:
				t.Fatal("opened with a key it is not encrypted for")
			case !c.ok:
				if !strings.Contains(err.Error(), "age "+r1+", age "+r2) {
					t.Errorf("error = %v, want both recipients named", err)
				}
			case err != nil:
				t.Fatal(err)
			case string(o.Plain) != want:
				t.Errorf("decrypted %q, want %q", o.Plain, want)
			}
		})
	}
}

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return b.String()
}

// agentKeys are the keys of a keys Secret holding the age identities.
func agentKeys(t *testing.T, identities ...string) *Keys {
	t.Helper()
	data := map[string][]byte{}
	for i, id := range identities {
		data[string(rune('a'+i))+".agekey"] = []byte(id)
	}
	keys, err := ParseKeys(data)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// A file of several key groups holds its data key split by Shamir's secret
// sharing: it opens with keys of as many groups as its threshold, and not
// with fewer.
func TestSOPSKeyGroupsOpenWithTheirThreshold(t *testing.T) {
	tools := sopstools.Find(t)
	var ids, recipients []string
	for range 3 {
		id, r := tools.AgeKey(t)
		ids, recipients = append(ids, id), append(recipients, r)
	}
	plain := "kind: Secret\nstringData:\n  password: hunter2\n"
	enc := encryptWithConfig(t, tools, "groups.yaml", plain, "creation_rules:\n  - shamir_threshold: 2\n    key_groups:\n"+
		"      - age: ["+recipients[0]+"]\n      - age: ["+recipients[1]+"]\n      - age: ["+recipients[2]+"]\n")
	if !strings.Contains(enc, "key_groups:") || !strings.Contains(enc, "shamir_threshold: 2") {
		t.Fatalf("sops wrote no key groups:\n%s", enc)
	}
	want := tools.Decrypt(t, "groups.yaml", enc, ids[0]+ids[2])
	for _, c := range []struct {
		step string
		ids  []string
		ok   bool
	}{
		{"keys of two groups of three", []string{ids[0], ids[2]}, true},
		{"keys of all three groups", ids, true},
		{"the key of one group only", []string{ids[1]}, false},
	} {
		t.Run(c.step, func(t *testing.T) {
			o, err := Open("groups.yaml", []byte(enc), agentKeys(t, c.ids...))
			switch {
			case !c.ok && err == nil:
				t.Fatal("opened with fewer groups than its threshold")
			case !c.ok:
				if !strings.Contains(err.Error(), "none of the Sync's keys opens it") {
					t.Errorf("error = %v", err)
				}
			case err != nil:
				t.Fatal(err)
			case string(o.Plain) != want:
				t.Errorf("decrypted %q, want %q", o.Plain, want)
			}
		})
	}
}

// A file encrypted for an OpenPGP key and an age recipient opens with the
// OpenPGP key alone, to what sops decrypts it with the age key.
func TestSOPSFilesOpenWithAnOpenPGPKey(t *testing.T) {
	tools := sopstools.Find(t)
	pubring, private, fingerprint := sopstools.PGPKey(t)
	identity, recipient := tools.AgeKey(t)
	for _, c := range sopsShapes {
		if c.rule != "" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			enc := tools.EncryptPGP(t, c.file, c.plain, pubring, fingerprint, append([]string{"--age", recipient}, c.args...)...)
			want := tools.Decrypt(t, c.file, enc, identity)
			keys, err := ParseKeys(map[string][]byte{"ops.asc": private})
			if err != nil {
				t.Fatal(err)
			}
			o, err := Open(c.file, []byte(enc), keys)
			if err != nil {
				t.Fatal(err)
			}
			got := string(o.Plain)
			if strings.HasSuffix(c.file, ".json") {
				got, want = compactJSON(t, got), compactJSON(t, want)
			}
			if got != want {
				t.Errorf("decrypted:\n%s\nsops decrypt printed:\n%s", got, want)
			}
		})
	}
}

// combineShares is Shamir's combination: any threshold of shares gives the
// secret back; shares of different lengths or given twice do not combine.
func TestCombineSharesRecoversTheSecret(t *testing.T) {
	secret := []byte("a data key of thirty-two bytes!!")
	// Shares of the polynomial secret + c·x (threshold 2) at x = 1, 2, 3.
	c := []byte("another thirty-two byte constant")
	shares := make([][]byte, 3)
	for i := range shares {
		x := byte(i + 1)
		for b := range secret {
			shares[i] = append(shares[i], secret[b]^gfMul(c[b], x))
		}
		shares[i] = append(shares[i], x)
	}
	for _, pick := range [][]int{{0, 1}, {1, 2}, {0, 2}, {0, 1, 2}} {
		var some [][]byte
		for _, i := range pick {
			some = append(some, shares[i])
		}
		got, err := combineShares(some)
		if err != nil || !bytes.Equal(got, secret) {
			t.Errorf("shares %v: %q, %v", pick, got, err)
		}
	}
	if _, err := combineShares([][]byte{shares[0], shares[0]}); err == nil {
		t.Error("a share given twice combined")
	}
	if _, err := combineShares([][]byte{shares[0], shares[1][:5]}); err == nil {
		t.Error("shares of different lengths combined")
	}
	if _, err := combineShares([][]byte{shares[0]}); err == nil {
		t.Error("one share combined")
	}
}
