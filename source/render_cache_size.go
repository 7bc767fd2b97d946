package source

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The render cache holds rendered objects decoded, as maps of maps, which take
// several times the bytes of the same objects as JSON (about six times for
// ordinary manifests): a cache bounded by the JSON size held several times its
// flag. heldSize estimates what the objects take on the Go heap instead, from the
// shape of Go's values: a map's header and its groups of eight slots (a string key
// and an interface value each, and a control word per group), a slice's header and
// backing array, a string's header and bytes, a boxed number. Allocations are
// rounded up to 8 bytes; the size classes of the allocator round up further, so the
// estimate is a little under the truth, and the test beside it holds it within a
// band of what the runtime measures.
const (
	wordBytes      = 8
	mapHeaderBytes = 48                         // the map's header
	mapSlotBytes   = 16 + 16                    // a string key and an interface value
	mapGroupBytes  = wordBytes + 8*mapSlotBytes // a control word and eight slots
	sliceHeader    = 24
	stringHeader   = 16
	objectBytes    = 2 * wordBytes // an *Unstructured and its one field
)

// heldSize is the estimated heap size of objs, as the render cache holds them.
func heldSize(objs []*unstructured.Unstructured) int64 {
	n := int64(len(objs)) * wordBytes // the slice's backing array
	for _, o := range objs {
		n += objectBytes + mapSize(o.Object)
	}
	return n
}

func mapSize(m map[string]any) int64 {
	n := int64(mapHeaderBytes) + mapGroups(len(m))*mapGroupBytes
	for k, v := range m {
		n += roundUp(len(k)) + valueSize(v)
	}
	return n
}

// mapGroups is how many groups of eight slots a map of n entries has: its slots
// are at most seven eighths full, in a power of two of groups.
func mapGroups(n int) int64 {
	groups := int64(1)
	for groups*7 < int64(n) {
		groups *= 2
	}
	return groups
}

// valueSize is what a value held in an interface takes beyond the interface.
func valueSize(v any) int64 {
	switch v := v.(type) {
	case map[string]any:
		return wordBytes + mapSize(v)
	case []any:
		n := int64(sliceHeader) + int64(len(v))*16
		for _, e := range v {
			n += valueSize(e)
		}
		return n
	case string:
		return stringHeader + roundUp(len(v))
	case bool, nil:
		return 0 // static values
	default: // int64, float64, json.Number: boxed
		return wordBytes
	}
}

func roundUp(n int) int64 {
	return int64((n + wordBytes - 1) / wordBytes * wordBytes)
}
