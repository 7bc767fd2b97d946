package source

import (
	"errors"
	"testing"
)

// TestSyntaxErrorsNameTheFilesOwnLine: a syntax error names the line of the file
// kubectl names, in any document of the stream.
func TestSyntaxErrorsNameTheFilesOwnLine(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"an unclosed flow list on line 7",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: b\n  list: [1, 2\n  c: d\n",
			"document 1: yaml: line 7: did not find expected ',' or ']'"},
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
