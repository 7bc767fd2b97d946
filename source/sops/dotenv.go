package sops

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// sopsDotenv reads and writes SOPS's dotenv files: KEY=value lines (a
// newline in a value written \n) and # comments, SOPS's metadata flattened
// into sops_… entries.
type sopsDotenv struct{}

var _ sopsFormat = sopsDotenv{}

func (sopsDotenv) load(in []byte) ([]sopsMap, error) {
	var m sopsMap
	for line := range bytes.SplitSeq(in, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if line[0] == '#' {
			m = append(m, sopsItem{key: sopsComment{text: string(line[1:])}})
			continue
		}
		key, value, ok := bytes.Cut(line, []byte("="))
		if !ok {
			return nil, errors.New("a line holds no '='")
		}
		m = append(m, sopsItem{key: string(key), value: strings.ReplaceAll(string(value), `\n`, "\n")})
	}
	return []sopsMap{m}, nil
}

func (sopsDotenv) emit(branches []sopsMap) ([]byte, error) {
	var b bytes.Buffer
	if len(branches) == 0 {
		return nil, errors.New("no entries")
	}
	for _, item := range branches[0] {
		if c, ok := item.key.(sopsComment); ok {
			fmt.Fprintf(&b, "#%s\n", c.text)
			continue
		}
		switch v := item.value.(type) {
		case sopsMap, []any:
			return nil, errors.New("a nested value")
		case string:
			fmt.Fprintf(&b, "%s=%s\n", item.key, strings.ReplaceAll(v, "\n", `\n`))
		default:
			fmt.Fprintf(&b, "%s=%s\n", item.key, dotenvText(v))
		}
	}
	return b.Bytes(), nil
}

// dotenvText writes a value that is no string as SOPS does.
func dotenvText(v any) string {
	switch v := v.(type) {
	case float64:
		s := strconv.FormatFloat(v, 'G', -1, 64)
		if !strings.ContainsAny(s, ".E") {
			s = strconv.FormatFloat(v, 'f', 1, 64)
		}
		return s
	case bool:
		return strconv.FormatBool(v)
	case time.Time:
		return v.Format(time.RFC3339)
	}
	return fmt.Sprintf("%v", v)
}

// Flattened metadata: sops_age__list_0__map_enc is sops.age[0].enc.
const (
	flatMap  = "__map_"
	flatList = "__list_"
)

// takeDotenvMetadata takes the sops_… entries out of a dotenv file's mapping
// and returns them nested, as the other formats hold them.
func takeDotenvMetadata(m sopsMap) (sopsMap, sopsMap, error) {
	root := &flatNode{}
	found := false
	var rest sopsMap
	for _, item := range m {
		key, ok := item.key.(string)
		if !ok || !strings.HasPrefix(key, sopsMetadataKey+"_") {
			rest = append(rest, item)
			continue
		}
		found = true
		if err := root.place(strings.TrimPrefix(key, sopsMetadataKey+"_"), item.value); err != nil {
			return nil, nil, err
		}
	}
	if !found {
		return m, nil, errNoSOPSMetadata
	}
	meta, err := root.tree(0)
	if err != nil {
		return nil, nil, err
	}
	mm, ok := meta.(sopsMap)
	if !ok {
		return nil, nil, errors.New("the sops_ entries are no mapping")
	}
	return rest, mm, nil
}

// flatNode is one level of flattened keys being nested again.
type flatNode struct {
	value    any
	hasValue bool
	keys     map[string]*flatNode
	indices  map[int]*flatNode
}

func (n *flatNode) place(key string, value any) error {
	for _, tok := range flatTokens(key) {
		if tok.isIndex {
			if n.indices == nil {
				n.indices = map[int]*flatNode{}
			}
			if n.indices[tok.index] == nil {
				n.indices[tok.index] = &flatNode{}
			}
			n = n.indices[tok.index]
			continue
		}
		if n.keys == nil {
			n.keys = map[string]*flatNode{}
		}
		if n.keys[tok.key] == nil {
			n.keys[tok.key] = &flatNode{}
		}
		n = n.keys[tok.key]
	}
	if n.hasValue {
		return fmt.Errorf("metadata entry %s given twice", key)
	}
	n.value, n.hasValue = value, true
	return nil
}

func (n *flatNode) tree(depth int) (any, error) {
	if depth > maxSOPSDepth {
		return nil, errSOPSTooDeep
	}
	kinds := 0
	for _, has := range []bool{n.hasValue, len(n.keys) > 0, len(n.indices) > 0} {
		if has {
			kinds++
		}
	}
	switch {
	case kinds > 1:
		return nil, errors.New("a metadata entry is both a value and nested")
	case n.hasValue:
		return n.value, nil
	case len(n.indices) > 0:
		l := make([]any, len(n.indices))
		for i, c := range n.indices {
			if i < 0 || i >= len(l) {
				return nil, errors.New("a metadata list with gaps")
			}
			v, err := c.tree(depth + 1)
			if err != nil {
				return nil, err
			}
			l[i] = v
		}
		return l, nil
	}
	m := sopsMap{}
	for _, k := range slices.Sorted(maps.Keys(n.keys)) {
		v, err := n.keys[k].tree(depth + 1)
		if err != nil {
			return nil, err
		}
		m = append(m, sopsItem{key: k, value: v})
	}
	return m, nil
}

type flatToken struct {
	key     string
	index   int
	isIndex bool
}

// flatTokens splits a flattened key at its __map_ and __list_ separators.
func flatTokens(key string) []flatToken {
	var out []flatToken
	isIndex := false
	for {
		i, sepLen, nextIndex := nextFlatSeparator(key)
		part := key
		if i >= 0 {
			part = key[:i]
		}
		if isIndex {
			n, err := strconv.Atoi(part)
			if err != nil || n > math.MaxInt32 {
				n = 0 // as SOPS reads an index that is no number
			}
			out = append(out, flatToken{index: n, isIndex: true})
		} else {
			out = append(out, flatToken{key: part})
		}
		if i < 0 {
			return out
		}
		key, isIndex = key[i+sepLen:], nextIndex
	}
}

func nextFlatSeparator(key string) (at, sepLen int, isIndex bool) {
	m, l := strings.Index(key, flatMap), strings.Index(key, flatList)
	switch {
	case m < 0 && l < 0:
		return -1, 0, false
	case l < 0 || (m >= 0 && m < l):
		return m, len(flatMap), false
	}
	return l, len(flatList), true
}
