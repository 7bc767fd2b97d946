package v1alpha1

import (
	"strings"
	"testing"
)

// TestCompareKeyOrdersAsKey compares every pair of refs whose parts differ where
// the joined Key and the parts disagree most easily (a part that is a prefix of
// another, characters before and after "/", empty parts): CompareKey always says
// what strings.Compare of the Keys says.
func TestCompareKeyOrdersAsKey(t *testing.T) {
	parts := []string{"", "a", "a.b", "a-b", "a0", "ab", "b", "a/"}
	var refs []ObjectRef
	for _, g := range parts {
		for _, k := range parts {
			for _, n := range parts[:4] {
				refs = append(refs, ObjectRef{Group: g, Kind: k, Namespace: n, Name: "x"}, ObjectRef{Group: g, Kind: k, Namespace: "", Name: n})
			}
		}
	}
	for _, a := range refs {
		for _, b := range refs {
			if got, want := a.CompareKey(b), strings.Compare(a.Key(), b.Key()); got != want {
				t.Fatalf("%q against %q: CompareKey %d, Compare of the Keys %d", a.Key(), b.Key(), got, want)
			}
		}
	}
}
