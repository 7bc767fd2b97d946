package apply

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
	"math"
	"slices"
	gosync "sync"
)

// digestWriter writes a decoded JSON value into a SHA-256 hash unambiguously: each
// value is tagged with its type and each string and container with its length, and
// a map's entries are written in the order of their keys. What it writes is never
// stored or sent (digests live in memory), so it only has to be the same for equal
// values within one process and differ for different ones.
//
// It keeps its buffer and the key lists of each depth between values, and
// writers are pooled (digestWriters): hashing an object allocates nothing once the
// pool is warm, where encoding/json sorts each map's keys into a new slice and
// reaches every value through reflection.
type digestWriter struct {
	h    hash.Hash
	buf  []byte
	keys [][]string // the keys of the map being written at each depth
}

var digestWriters = gosync.Pool{New: func() any {
	return &digestWriter{h: sha256.New(), buf: make([]byte, 0, 4096)}
}}

// maxDigestDepth bounds the nesting written; a deeper value is not hashed (it is
// simply dry-run). Rendered objects are far shallower.
const maxDigestDepth = 100

func (w *digestWriter) reset() {
	w.h.Reset()
	w.buf = w.buf[:0]
}

func (w *digestWriter) sum() digest {
	w.flush()
	var d digest
	w.h.Sum(d[:0])
	return d
}

func (w *digestWriter) flush() {
	_, _ = w.h.Write(w.buf)
	w.buf = w.buf[:0]
}

func (w *digestWriter) tag(t byte, n uint64) {
	w.buf = append(w.buf, t)
	w.buf = binary.AppendUvarint(w.buf, n)
	if len(w.buf) >= cap(w.buf)-binary.MaxVarintLen64-1 {
		w.flush()
	}
}

func (w *digestWriter) string(s string) {
	w.tag('s', uint64(len(s)))
	for len(s) > 0 {
		n := min(len(s), cap(w.buf)-len(w.buf))
		w.buf = append(w.buf, s[:n]...)
		s = s[n:]
		if len(w.buf) == cap(w.buf) {
			w.flush()
		}
	}
}

func (w *digestWriter) value(v any, depth int) error {
	if depth > maxDigestDepth {
		return fmt.Errorf("nested deeper than %d", maxDigestDepth)
	}
	switch v := v.(type) {
	case nil:
		w.tag('n', 0)
	case bool:
		if v {
			w.tag('t', 0)
		} else {
			w.tag('f', 0)
		}
	case string:
		w.string(v)
	case int64:
		w.tag('i', uint64(v))
	case float64:
		w.tag('d', math.Float64bits(v))
	case []any:
		w.tag('[', uint64(len(v)))
		for _, e := range v {
			if err := w.value(e, depth+1); err != nil {
				return err
			}
		}
	case map[string]any:
		w.tag('{', uint64(len(v)))
		for len(w.keys) <= depth {
			w.keys = append(w.keys, nil)
		}
		keys := w.keys[depth][:0]
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		w.keys[depth] = keys
		for _, k := range keys {
			w.string(k)
			if err := w.value(v[k], depth+1); err != nil {
				return err
			}
		}
		clear(keys) // let the pool keep no key of this object
	default:
		// Not what decoding JSON makes (an object built in code): its JSON, tagged.
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		w.tag('j', uint64(len(b)))
		w.string(string(b))
	}
	return nil
}
