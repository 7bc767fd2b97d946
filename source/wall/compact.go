package wall

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// The render cache holds each rendered object as its JSON, one byte slice per
// object, and decodes them again on a hit: decoded, as maps of maps, the same
// objects take about six times the bytes (TestTheRenderCacheCountsWhatItHolds
// logs both), and a revision of thousands of objects held decoded was the
// largest holder of the agent's heap after the live objects. A hit then costs
// a decode of each object (BenchmarkAHitOfTheRenderCache), which a converged
// resync pays once per interval.
type compactObjects [][]byte

// compact encodes objs for the render cache.
func compact(objs []*unstructured.Unstructured) (compactObjects, error) {
	out := make(compactObjects, len(objs))
	for i, o := range objs {
		b, err := json.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// decode returns new objects from held, with numbers decoded as DecodeManifests
// decodes them (integers as int64), so that a hit equals the render.
func (held compactObjects) decode() ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, len(held))
	for i, b := range held {
		var m map[string]any
		if err := utiljson.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		out[i] = &unstructured.Unstructured{Object: m}
	}
	return out, nil
}

const (
	wordBytes   = 8
	sliceHeader = 24
)

// heldSize is the heap size of held, as the render cache holds it: the slice's
// backing array of slice headers, and each object's bytes, rounded up to a
// word (the allocator's size classes round up a little further, so the figure
// is a little under the truth; the test beside it holds it within a band of
// what the runtime measures).
func heldSize(held compactObjects) int64 {
	n := int64(len(held)) * sliceHeader
	for _, b := range held {
		n += roundUp(cap(b))
	}
	return n
}

func roundUp(n int) int64 {
	return int64((n + wordBytes - 1) / wordBytes * wordBytes)
}

// HeldSize is what the render cache counts for objs: each as its JSON, as a
// worker answers it.
func HeldSize(objs []*unstructured.Unstructured) (int64, error) {
	held, err := compact(objs)
	if err != nil {
		return 0, err
	}
	return heldSize(held), nil
}
