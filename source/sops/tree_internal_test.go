package sops

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/result"
	"tether.dev/tether/test/sopstools"
)

// Whatever changes a SOPS file after sops wrote it, in any format, is
// refused: the MAC covers every value (or, with mac_only_encrypted, every
// encrypted one), the values' order, and the file's lastmodified.
func TestSOPSFilesChangedAfterEncryptionAreRefused(t *testing.T) {
	tools := sopstools.Find(t)
	identity, recipient := tools.AgeKey(t)
	keys := agentKeys(t, identity)
	yamlFile := tools.EncryptAge(t, "s.yaml", "kind: Secret\nstringData:\n  a: first-value\n  b: second-value\ntype: Opaque\n", []string{recipient},
		"--encrypted-regex", "^stringData$")
	dotenv := tools.EncryptAge(t, "app.env", "A=first-value\nB=second-value\n", []string{recipient})
	binary := tools.EncryptAge(t, "tls.crt", "certificate bytes", []string{recipient})
	macOnly := encryptWithConfig(t, tools, "m.yaml", "kind: Secret\nstringData:\n  a: first-value\n  b: second-value\nclear: c\n",
		"creation_rules:\n  - age: "+recipient+"\n    encrypted_regex: ^stringData$\n    mac_only_encrypted: true\n")

	enc := regexp.MustCompile(`ENC\[AES256_GCM,data:[^,]*,iv:[^,]*,tag:[^,]*,type:str\]`)
	values := func(file string) []string { return enc.FindAllString(file, -1) }
	cases := []struct {
		step, file, content, reason string
	}{
		{"a YAML file's two encrypted values swapped", "s.yaml",
			swap(yamlFile, values(yamlFile)[0], values(yamlFile)[1]), v1alpha1.ReasonDecryptionTampered},
		{"a YAML file's encrypted value removed", "s.yaml",
			strings.Replace(yamlFile, "    b: "+values(yamlFile)[1]+"\n", "", 1), v1alpha1.ReasonDecryptionTampered},
		{"a YAML file's MAC changed", "s.yaml", flipData(t, yamlFile, "mac: "), v1alpha1.ReasonDecryptionTampered},
		{"a YAML file's MAC removed", "s.yaml", regexp.MustCompile(`(?m)^    mac: .*\n`).ReplaceAllString(yamlFile, ""), v1alpha1.ReasonDecryptionTampered},
		{"a YAML file's lastmodified changed", "s.yaml",
			regexp.MustCompile(`lastmodified: "\d{4}`).ReplaceAllString(yamlFile, `lastmodified: "1999`), v1alpha1.ReasonDecryptionTampered},
		{"a dotenv file's value changed", "app.env", flipData(t, dotenv, "A="), v1alpha1.ReasonDecryptionTampered},
		{"a dotenv file's line added", "app.env", "C=added\n" + dotenv, v1alpha1.ReasonDecryptionTampered},
		{"a binary file's data changed", "tls.crt", flipData(t, binary, `"data": "`), v1alpha1.ReasonDecryptionTampered},
		{"a mac_only_encrypted file's encrypted values swapped", "m.yaml",
			swap(macOnly, values(macOnly)[0], values(macOnly)[1]), v1alpha1.ReasonDecryptionTampered},
		{"a file whose sops entry is no mapping", "s.yaml", regexp.MustCompile(`(?s)\nsops:.*`).ReplaceAllString(yamlFile, "\nsops: 1\n"), v1alpha1.ReasonDecryptionFailed},
		{"a file of two encryption rules", "s.yaml",
			strings.Replace(yamlFile, "    encrypted_regex:", "    unencrypted_suffix: _x\n    encrypted_regex:", 1), v1alpha1.ReasonDecryptionFailed},
		{"a file without master keys", "s.yaml", regexp.MustCompile(`(?s)    age:.*?-----END AGE ENCRYPTED FILE-----\n`).ReplaceAllString(yamlFile, ""),
			v1alpha1.ReasonDecryptionFailed},
	}
	for _, c := range cases {
		t.Run(c.step, func(t *testing.T) {
			if c.content == "" {
				t.Fatal("the fixture was not changed")
			}
			_, err := Open(c.file, []byte(c.content), keys)
			var re *result.RenderError
			if !errors.As(err, &re) || re.Reason != c.reason {
				t.Fatalf("error = %v, want a %s", err, c.reason)
			}
			if strings.Contains(err.Error(), "-value") {
				t.Errorf("error quotes a plaintext: %v", err)
			}
		})
	}

	t.Run("a mac_only_encrypted file's clear value may change: SOPS leaves it out of the MAC", func(t *testing.T) {
		o, err := Open("m.yaml", []byte(strings.Replace(macOnly, "clear: c", "clear: changed", 1)), keys)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(o.Plain), "clear: changed") || !strings.Contains(string(o.Plain), "a: first-value") {
			t.Errorf("decrypted:\n%s", o.Plain)
		}
	})
	t.Run("the decrypted values are listed for redaction, the clear ones are not", func(t *testing.T) {
		o, err := Open("s.yaml", []byte(yamlFile), keys)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(o.Values, ","); got != "first-value,second-value" {
			t.Errorf("values = %q", got)
		}
	})
}

func swap(file, a, b string) string {
	return strings.NewReplacer(a, b, b, a).Replace(file)
}

// flipData changes the first character of the encrypted data after marker.
func flipData(t *testing.T, file, marker string) string {
	t.Helper()
	i := strings.Index(file, marker)
	if i < 0 {
		t.Fatalf("no %q in the file", marker)
	}
	j := i + strings.Index(file[i:], "data:") + len("data:")
	c := byte('A')
	if file[j] == 'A' {
		c = 'B'
	}
	return file[:j] + string(c) + file[j+1:]
}

// Hostile files are refused as invalid, never crash the agent.
func TestSOPSFilesBeyondTheBoundsAreRefused(t *testing.T) {
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	cases := []struct{ step, file, content string }{
		{"JSON nested past the bound", "deep.json", `{"a": ` + deep + `, "sops": {}}`},
		{"a binary file nested past the bound", "deep.bin", `{"a": ` + deep + `, "sops": {}}`},
		{"a dotenv file with a metadata list of gaps", "a.env", "sops_mac=x\nsops_age__list_5__map_enc=x\n"},
		{"a dotenv file whose metadata entry is both a value and nested", "a.env", "sops_mac=x\nsops_age=1\nsops_age__list_0__map_enc=x\n"},
		{"a YAML document that is a list", "l.yaml", "- a\nsops:\n"},
	}
	for _, c := range cases {
		t.Run(c.step, func(t *testing.T) {
			_, err := Open(c.file, []byte(c.content), nil)
			var re *result.RenderError
			if !errors.As(err, &re) || re.Reason != v1alpha1.ReasonDecryptionFailed || !strings.Contains(err.Error(), "not a valid SOPS file") {
				t.Fatalf("error = %v, want an invalid SOPS file", err)
			}
		})
	}
}

// FuzzOpenSOPS feeds changed SOPS files of every format to the decryption:
// it never panics, and only a file that authenticates decrypts.
func FuzzOpenSOPS(f *testing.F) {
	tools := sopstools.Find(f)
	identity, recipient := tools.AgeKey(f)
	keys, err := ParseKeys(map[string][]byte{"k.agekey": []byte(identity)})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []struct{ file, plain string }{
		{"a.yaml", "a: b\n# c\nl: [1, 2.5, true, null]\n"},
		{"a.json", `{"a": {"b": [1, "c"]}}`},
		{"a.env", "A=b\n#c\n"},
		{"a.bin", "bytes"},
	} {
		f.Add(s.file, []byte(tools.EncryptAge(f, s.file, s.plain, []string{recipient})))
	}
	f.Fuzz(func(t *testing.T, file string, data []byte) {
		o, err := Open(file, data, keys)
		if err != nil {
			var re *result.RenderError
			if !errors.As(err, &re) || re.Reason == "" {
				t.Fatalf("error %v is no RenderError with a reason", err)
			}
			return
		}
		if o != nil && o.Plain == nil {
			t.Error("decrypted to nothing without an error")
		}
	})
}
