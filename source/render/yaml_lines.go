package render

import (
	"bytes"
	"errors"
	"io"
	"strings"

	yaml2 "go.yaml.in/yaml/v2"
)

// syntaxError returns the syntax error of a YAML stream as kubectl reports it,
// given the error the stream's decoder (yaml.v3) returned for it.
//
// yaml.v3 names the line where the construct around an error began, counted from
// zero for parser errors and from one for scanner errors: an unclosed flow list on
// line 7 is "line 6", a tab on line 5 "line 4". The YAML library kubectl reads
// manifests with (through sigs.k8s.io/yaml) names the line users expect, so on
// this error path only, the stream is read again with it up to its first syntax
// error, without building any value: documents are decoded into an empty struct,
// which skips every field. Where it finds no syntax error, the decoder's own
// error stands, and so it does where the stream ends inside a quoted scalar:
// yaml.v3 names the line where the quote opened, kubectl's library the line
// after the file's last.
func syntaxError(data []byte, decodeErr error) error {
	dec := yaml2.NewDecoder(bytes.NewReader(data))
	for {
		var skip struct{}
		err := dec.Decode(&skip)
		var typeErr *yaml2.TypeError
		switch {
		case errors.Is(err, io.EOF):
			return decodeErr
		case errors.As(err, &typeErr):
			continue // a document that is not a mapping: not a syntax error
		case err != nil && strings.Contains(err.Error(), "found unexpected end of stream"):
			return decodeErr
		case err != nil:
			return err
		}
	}
}
