package apply

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/types"

	"tether.dev/tether/apply/contract"
)

// liveJSON reads the API server's answer to a write, an object as JSON, without
// decoding it: its resourceVersion and UID, and its JSON without
// metadata.managedFields (what an Object keeps). Decoding the answer into maps and
// encoding it again without managedFields, as NewObject does, was a tenth of the
// agent's CPU in a first sync and a fifth of what it allocated.
//
// It scans the top level and metadata only, and refuses what is not a JSON object
// with a metadata object, or is not JSON.
func liveJSON(data []byte) (*Object, string, error) {
	if !json.Valid(data) {
		return nil, "", errors.New("the answer is not JSON")
	}
	s := scanner{data: data}
	top, err := s.members(s.skipSpace(0))
	if err != nil {
		return nil, "", err
	}
	var meta *member
	for i := range top {
		if top[i].name == "metadata" {
			meta = &top[i]
		}
	}
	if meta == nil || data[meta.value] != '{' {
		return nil, "", errors.New("the answer has no metadata")
	}
	fields, err := s.members(meta.value)
	if err != nil {
		return nil, "", err
	}
	var rv string
	var uid types.UID
	tail := bytes.TrimSpace(data[meta.end:])
	size := meta.value + 2 + len(tail) + len(fields) // the commas, and one spare
	for _, f := range fields {
		if f.name != "managedFields" {
			size += f.end - f.start
		}
	}
	// Sized to what is kept: the verified cache holds it, and the answer's
	// managedFields are often a third of it.
	out := make([]byte, 0, size)
	out = append(out, data[:meta.value]...)
	out = append(out, '{')
	kept := 0
	for _, f := range fields {
		switch f.name {
		case "managedFields":
			continue
		case "resourceVersion", "uid":
			if data[f.value] != '"' {
				return nil, "", fmt.Errorf("metadata.%s is not a string", f.name)
			}
			v, err := s.str(f.value, f.end)
			if err != nil {
				return nil, "", fmt.Errorf("metadata.%s: %w", f.name, err)
			}
			if f.name == "uid" {
				uid = types.UID(v)
			} else {
				rv = v
			}
		}
		if kept > 0 {
			out = append(out, ',')
		}
		out = append(out, data[f.start:f.end]...)
		kept++
	}
	out = append(out, '}')
	out = append(out, tail...)
	return contract.ObjectFromJSON(out, uid), rv, nil
}

// member is one member of a JSON object: its name, decoded, and where it starts
// (its name's opening quote), where its value starts, and where it ends.
type member struct {
	name              string
	start, value, end int
}

// scanner walks JSON already known to be valid (json.Valid), so it checks only
// what it relies on.
type scanner struct{ data []byte }

// members lists the members of the object that starts at i.
func (s scanner) members(i int) ([]member, error) {
	if i >= len(s.data) || s.data[i] != '{' {
		return nil, errors.New("the answer is not a JSON object")
	}
	var out []member
	i = s.skipSpace(i + 1)
	if i < len(s.data) && s.data[i] == '}' {
		return out, nil
	}
	for i < len(s.data) {
		m := member{start: i}
		if s.data[i] != '"' {
			return nil, errors.New("the answer is not a JSON object")
		}
		end := s.skipString(i)
		name, err := s.str(i, end)
		if err != nil {
			return nil, err
		}
		m.name = name
		i = s.skipSpace(end)
		if i >= len(s.data) || s.data[i] != ':' {
			return nil, errors.New("the answer is not a JSON object")
		}
		m.value = s.skipSpace(i + 1)
		m.end = s.skip(m.value)
		out = append(out, m)
		i = s.skipSpace(m.end)
		if i < len(s.data) && s.data[i] == ',' {
			i = s.skipSpace(i + 1)
			continue
		}
		if i < len(s.data) && s.data[i] == '}' {
			return out, nil
		}
		break
	}
	return nil, errors.New("the answer is not a JSON object")
}

// skip returns where the value that starts at i ends.
func (s scanner) skip(i int) int {
	if i >= len(s.data) {
		return i
	}
	switch s.data[i] {
	case '"':
		return s.skipString(i)
	case '{', '[':
		depth := 0
		for i < len(s.data) {
			switch s.data[i] {
			case '"':
				i = s.skipString(i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default: // a number, true, false or null
		for ; i < len(s.data); i++ {
			switch s.data[i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return i
			}
		}
		return i
	}
}

// str decodes the string from i to end (its quotes included).
func (s scanner) str(i, end int) (string, error) {
	raw := s.data[i:end]
	if len(raw) < 2 {
		return "", errors.New("the answer is not a JSON object")
	}
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), nil
	}
	var out string
	err := json.Unmarshal(raw, &out)
	return out, err
}

// skipString returns where the string that starts at i ends (after its quote).
func (s scanner) skipString(i int) int {
	for i++; i < len(s.data); i++ {
		switch s.data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// skipSpace returns where the first byte from i that is not white space is.
func (s scanner) skipSpace(i int) int {
	for i < len(s.data) {
		switch s.data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}
