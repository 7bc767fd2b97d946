package sops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// sopsJSON reads and writes SOPS's JSON files: one object, its keys in
// order, numbers as int when they are whole.
type sopsJSON struct{}

var _ sopsFormat = sopsJSON{}

func (sopsJSON) load(in []byte) ([]sopsMap, error) {
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, errors.New("the top level is no object")
	}
	m, err := jsonObject(dec, 1)
	if err != nil {
		return nil, err
	}
	return []sopsMap{m}, nil
}

// jsonObject reads the rest of an object whose '{' dec has read.
func jsonObject(dec *json.Decoder, depth int) (sopsMap, error) {
	if depth > maxSOPSDepth {
		return nil, errSOPSTooDeep
	}
	var m sopsMap
	for {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if d, ok := t.(json.Delim); ok && d == '}' {
			return m, nil
		}
		key, ok := t.(string)
		if !ok {
			return nil, fmt.Errorf("an object key is a %T", t)
		}
		v, err := jsonValue(dec, depth)
		if err != nil {
			return nil, err
		}
		m = append(m, sopsItem{key: key, value: v})
	}
}

// jsonList reads the rest of an array whose '[' dec has read.
func jsonList(dec *json.Decoder, depth int) ([]any, error) {
	if depth > maxSOPSDepth {
		return nil, errSOPSTooDeep
	}
	var l []any
	for dec.More() {
		v, err := jsonValue(dec, depth)
		if err != nil {
			return nil, err
		}
		l = append(l, v)
	}
	_, err := dec.Token() // ']'
	return l, err
}

func jsonValue(dec *json.Decoder, depth int) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			return jsonObject(dec, depth+1)
		case '[':
			return jsonList(dec, depth+1)
		}
		return nil, fmt.Errorf("unexpected %s", t)
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return int(i), nil
		}
		return t.Float64()
	}
	return t, nil
}

// emit writes the object as SOPS's JSON store writes it with its default
// configuration: one entry a line, no indentation.
func (sopsJSON) emit(branches []sopsMap) ([]byte, error) {
	if len(branches) == 0 {
		return nil, errors.New("no object")
	}
	var b strings.Builder
	if err := jsonWrite(&b, branches[0]); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, []byte(b.String()), "", ""); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func jsonWrite(b *strings.Builder, v any) error {
	switch v := v.(type) {
	case sopsMap:
		b.WriteByte('{')
		first := true
		for _, item := range v {
			key, ok := item.key.(string)
			if !ok {
				continue // a comment
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			k, err := json.Marshal(key)
			if err != nil {
				return err
			}
			b.Write(k)
			b.WriteString(": ")
			if err := jsonWrite(b, item.value); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		first := true
		for _, item := range v {
			if _, ok := item.(sopsComment); ok {
				continue
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			if err := jsonWrite(b, item); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(data)
	}
	return nil
}

// sopsBinary reads SOPS's files of any other name: a JSON object whose data
// entry holds the whole content, encrypted as one value.
type sopsBinary struct{}

var _ sopsFormat = sopsBinary{}

func (sopsBinary) load(in []byte) ([]sopsMap, error) { return sopsJSON{}.load(in) }

func (sopsBinary) emit(branches []sopsMap) ([]byte, error) {
	if len(branches) != 1 {
		return nil, errors.New("not one object")
	}
	for _, item := range branches[0] {
		if item.key == "data" {
			s, ok := item.value.(string)
			if !ok {
				return nil, errors.New("data is no string")
			}
			return []byte(s), nil
		}
	}
	return nil, errors.New("no data entry")
}
