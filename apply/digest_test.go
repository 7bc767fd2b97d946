package apply

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestHashOfTellsObjectsApart hashes objects that differ in one way each (a value,
// a key, a type, where a string ends, how values nest): every digest differs from
// every other, and an object equal to one of them, its maps filled in another
// order, hashes as that one.
func TestHashOfTellsObjectsApart(t *testing.T) {
	long := strings.Repeat("x", 10000)
	objects := map[string]map[string]any{
		"base":                          {"kind": "ConfigMap", "data": map[string]any{"a": "bc"}},
		"another value":                 {"kind": "ConfigMap", "data": map[string]any{"a": "bd"}},
		"a key and value cut elsewhere": {"kind": "ConfigMap", "data": map[string]any{"ab": "c"}},
		"a list":                        {"kind": "ConfigMap", "data": []any{"a", "bc"}},
		"a list cut elsewhere":          {"kind": "ConfigMap", "data": []any{"ab", "c"}},
		"a number":                      {"kind": "ConfigMap", "data": map[string]any{"a": int64(1)}},
		"a float":                       {"kind": "ConfigMap", "data": map[string]any{"a": 1.5}},
		"true":                          {"kind": "ConfigMap", "data": map[string]any{"a": true}},
		"false":                         {"kind": "ConfigMap", "data": map[string]any{"a": false}},
		"null":                          {"kind": "ConfigMap", "data": map[string]any{"a": nil}},
		"empty map":                     {"kind": "ConfigMap", "data": map[string]any{"a": map[string]any{}}},
		"empty list":                    {"kind": "ConfigMap", "data": map[string]any{"a": []any{}}},
		"nested":                        {"kind": "ConfigMap", "data": map[string]any{"a": map[string]any{"b": "c"}}},
		"flat":                          {"kind": "ConfigMap", "data": map[string]any{"a": "b", "c": ""}},
		"a long value":                  {"kind": "ConfigMap", "data": map[string]any{"a": long}},
		"a longer value":                {"kind": "ConfigMap", "data": map[string]any{"a": long + "x"}},
		"built in code":                 {"kind": "ConfigMap", "data": map[string]string{"a": "bc"}},
	}
	seen := map[digest]string{}
	for name, obj := range objects {
		d := hashOf(&unstructured.Unstructured{Object: obj}, "tether", "")
		if other, ok := seen[d]; ok {
			t.Errorf("%q and %q hash alike", name, other)
		}
		seen[d] = name
	}

	base := hashOf(&unstructured.Unstructured{Object: objects["base"]}, "tether", "")
	reordered := map[string]any{}
	reordered["data"] = map[string]any{"a": "bc"}
	reordered["kind"] = "ConfigMap"
	if hashOf(&unstructured.Unstructured{Object: reordered}, "tether", "") != base {
		t.Error("an equal object filled in another order hashes differently")
	}
	if hashOf(&unstructured.Unstructured{Object: objects["base"]}, "other", "") == base {
		t.Error("another field manager hashes alike")
	}
	if hashOf(&unstructured.Unstructured{Object: objects["base"]}, "tether", "salt") == base {
		t.Error("another salt hashes alike")
	}
	if hashOf(&unstructured.Unstructured{Object: objects["base"]}, "tethe", "r") == base {
		t.Error("the field manager and salt cut elsewhere hash alike")
	}
}

// TestHashOfADeepValueMatchesNothing: a value nested past maxDigestDepth gets the
// zero digest, which no remembered object has (it is dry-run).
func TestHashOfADeepValueMatchesNothing(t *testing.T) {
	v := any("leaf")
	for range maxDigestDepth + 1 {
		v = []any{v}
	}
	if d := hashOf(&unstructured.Unstructured{Object: map[string]any{"spec": v}}, "tether", ""); d != (digest{}) {
		t.Errorf("digest %x; want zero", d)
	}
}

// BenchmarkHashOf hashes a Deployment as a converged reconcile does each of its
// objects.
func BenchmarkHashOf(b *testing.B) {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON([]byte(`{"apiVersion":"apps/v1","kind":"Deployment",
		"metadata":{"name":"web","namespace":"apps","labels":{"app":"web","tether.dev/sync":"apps.web"},
		"annotations":{"tether.dev/owned-by":"apps/web"}},
		"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},
		"template":{"metadata":{"labels":{"app":"web"}},"spec":{"serviceAccountName":"web",
		"containers":[{"name":"app","image":"registry.k8s.io/pause:3.10","ports":[{"containerPort":8080}],
		"env":[{"name":"GREETING","value":"hello"}]}]}}}}`)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		hashOf(obj, "tether", "")
	}
}
