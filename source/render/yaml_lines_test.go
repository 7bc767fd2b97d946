package render

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"unicode/utf16"
)

// TestSyntaxErrorsNameTheFilesOwnLine: a syntax error names the line of the file
// kubectl names, in any document of the stream.
func TestSyntaxErrorsNameTheFilesOwnLine(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"an unclosed flow list on line 7",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: b\n  list: [1, 2\n  c: d\n",
			"document 1: yaml: line 7: did not find expected ',' or ']'"},
		{"a quote opened on line 6 of 7, never closed",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: \"b\n  c: d\n",
			"document 1: yaml: line 6: found unexpected end of stream"},
		{"a quote opened on line 11, in the second document, never closed",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  k: 'oops\n",
			"document 2: yaml: line 11: found unexpected end of stream"},
		{"a tab on line 5",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n\tdata: y\n",
			"document 1: yaml: line 5: found a tab character that violates indentation"},
		{"an unclosed flow list on line 11, in the second document",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  k: [oops\n",
			"document 2: yaml: line 11: did not find expected ',' or ']'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeManifests([]byte(tc.yaml))
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("an error that is not of syntax keeps its own message", func(t *testing.T) {
		own := errors.New("excessive aliasing")
		data := []byte("- a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
		if err := syntaxError(data, own); err != own { //nolint:errorlint // the very value
			t.Errorf("error %v, want the decoder's own", err)
		}
	})
}

// TestAFileSavedAsUTF16IsReadAsKubectlReadsIt: a manifest saved as UTF-16 with a
// byte-order mark, either order, or as UTF-8 with one, decodes to the object
// its text holds; an odd byte after a UTF-16 mark fails, saying so.
func TestAFileSavedAsUTF16IsReadAsKubectlReadsIt(t *testing.T) {
	text := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: café\ndata:\n  greeting: grüß dich\n"
	units := utf16.Encode([]rune(text))
	little, big := []byte{0xFF, 0xFE}, []byte{0xFE, 0xFF}
	for _, u := range units {
		little = binary.LittleEndian.AppendUint16(little, u)
		big = binary.BigEndian.AppendUint16(big, u)
	}
	for name, data := range map[string][]byte{
		"UTF-16, little-endian": little,
		"UTF-16, big-endian":    big,
		"UTF-8 with a mark":     append([]byte{0xEF, 0xBB, 0xBF}, text...),
	} {
		t.Run(name, func(t *testing.T) {
			objs, err := DecodeManifests(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != 1 || objs[0].GetName() != "café" || objs[0].Object["data"].(map[string]any)["greeting"] != "grüß dich" {
				t.Errorf("decoded %v, want the ConfigMap café greeting grüß dich", objs)
			}
		})
	}
	if _, err := DecodeManifests(append(little, 'x')); err == nil || !strings.Contains(err.Error(), "UTF-16") {
		t.Errorf("a UTF-16 file of an odd length: error %v, want one naming UTF-16", err)
	}
}
