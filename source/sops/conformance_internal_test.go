package sops

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tether.dev/tether/test/sopstools"
)

// The pinned sops CLI is the oracle of Tether's SOPS reading: files encrypted
// by it, in every shape a repository may hold, must decrypt to exactly what
// `sops decrypt` prints.

// sopsShapes are plaintexts of every format, each with the sops arguments
// that encrypt it.
var sopsShapes = []struct {
	name, file, plain string
	args              []string
	// rule, when set, encrypts through a .sops.yaml creation rule holding
	// these lines (options the CLI has no flag for).
	rule string
}{
	{name: "YAML: nested mappings, lists, scalars of every type, multi-line strings, comments", file: "app.yaml", plain: `# head comment
apiVersion: v1 # inline comment
kind: Secret
metadata:
  name: db
  labels: {app: web, tier: "1"}
  annotations:
    note: |
      first line
      second line
    folded: >
      one
      two
stringData:
  password: hunter2-correct-horse
  empty: ""
  nothing: null
numbers:
  int: 42
  negative: -7
  float: 3.25
  big: 1e3
  octal: 0o17
  yes: true
  no: false
  date: 2026-11-27
list:
  - a
  # between items
  - 2
  - [x, y]
  - {k: v, n: 1.5}
  - - nested
    - deeper
# foot comment
`},
	{name: "YAML: several documents", file: "multi.yaml", plain: "a: 1\nb: two\n---\nc: [3, 4]\n---\nd: {e: f}\n"},
	{name: "YAML: a values-only rule, encrypted_regex", file: "regex.yaml", plain: "kind: Secret\ndata:\n  a: YQ==\nstringData:\n  b: c\nother: clear\n",
		args: []string{"--encrypted-regex", "^(data|stringData)$"}},
	{name: "YAML: unencrypted_regex", file: "unregex.yaml", plain: "public: p\nsecret: s\nnested:\n  public_too: q\n  x: y\n",
		args: []string{"--unencrypted-regex", "^public"}},
	{name: "YAML: unencrypted_suffix", file: "suffix.yaml", plain: "host_clear: db.local\npassword: pw\nblock_clear:\n  a: 1\n",
		args: []string{"--unencrypted-suffix", "_clear"}},
	{name: "YAML: encrypted_suffix", file: "esuffix.yaml", plain: "host: db.local\npassword_enc: pw\nblock_enc:\n  a: 1\n",
		args: []string{"--encrypted-suffix", "_enc"}},
	{name: "YAML: encrypted_comment_regex", file: "ecomment.yaml", plain: "# sops:enc\npassword: pw\nhost: h\nlist:\n  # sops:enc\n  - secret\n  - clear\n",
		rule: "encrypted_comment_regex: sops:enc"},
	{name: "YAML: unencrypted_comment_regex", file: "ucomment.yaml", plain: "# public\nhost: h\npassword: pw\n",
		rule: "unencrypted_comment_regex: public"},
	{name: "YAML: mac_only_encrypted", file: "maconly.yaml", plain: "kind: Secret\nstringData:\n  a: b\nclear: c\n",
		rule: "encrypted_regex: ^stringData$\n    mac_only_encrypted: true"},
	{name: "JSON: nested, numbers, unicode and HTML characters", file: "app.json",
		plain: `{"apiVersion": "v1", "kind": "Secret", "n": {"i": 1, "f": 2.5, "e": 1e21, "b": true, "z": null, "l": [1, "two", [3], {"four": 4}]}, "s": "<a href=\"x\">&amp;</a> ünï €", "empty": ""}`},
	{name: "JSON: encrypted_regex", file: "regex.json", plain: `{"kind": "Secret", "stringData": {"a": "b"}, "metadata": {"name": "x"}}`,
		args: []string{"--encrypted-regex", "^stringData$"}},
	{name: "dotenv: comments, a multi-line value, an empty one", file: "app.env", plain: "# a comment\nDB_PASSWORD=hunter2\nMULTI=one\\ntwo\nEMPTY=\nWITH_EQUALS=a=b\n"},
	{name: "binary: any bytes", file: "tls.crt", plain: "binary-cert-\x00\x01-payload\nand a second line\n"},
	{name: "binary: a YAML file sops is told to read as binary", file: "raw.bin", plain: "key: value\n"},
}

func TestSOPSFilesDecryptToWhatTheSOPSCLIPrints(t *testing.T) {
	tools := sopstools.Find(t)
	identity, recipient := tools.AgeKey(t)
	keys, err := ParseKeys(map[string][]byte{"id.agekey": []byte(identity)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range sopsShapes {
		t.Run(c.name, func(t *testing.T) {
			var enc string
			if c.rule != "" {
				enc = encryptWithConfig(t, tools, c.file, c.plain, "creation_rules:\n  - age: "+recipient+"\n    "+c.rule+"\n")
			} else {
				enc = tools.EncryptAge(t, c.file, c.plain, []string{recipient}, c.args...)
			}
			want := tools.Decrypt(t, c.file, enc, identity)
			o, err := Open(c.file, []byte(enc), keys)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			got := string(o.Plain)
			if strings.HasSuffix(c.file, ".json") {
				// The agent writes JSON as sops's library does by default, one
				// entry a line without indentation; the CLI indents with tabs.
				got, want = compactJSON(t, got), compactJSON(t, want)
			}
			if got != want {
				t.Errorf("decrypted:\n%s\nsops decrypt printed:\n%s", got, want)
			}
		})
	}
}

// encryptWithConfig encrypts plaintext with the sops CLI as a repository
// with the .sops.yaml config does.
func encryptWithConfig(t *testing.T, tools *sopstools.Tools, name, plaintext, config string) string {
	t.Helper()
	dir := t.TempDir()
	for p, data := range map[string]string{".sops.yaml": config, name: plaintext} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(tools.SOPS, "encrypt", name)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin", "GNUPGHOME=" + filepath.Join(dir, ".gnupg")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sops encrypt: %v\n%s", err, stderr.String())
	}
	return stdout.String()
}
