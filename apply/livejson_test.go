package apply

import (
	"encoding/json"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/test/controlplane"
)

// answer is a Deployment as the API server answers a server-side apply: managedFields
// in the middle of metadata, a trailing newline.
const answer = `{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"web","namespace":"shop","uid":"6f1b7c36-5f0e-4f5e-9a55-1b1a1f1e2d3c","resourceVersion":"123456","generation":1,"creationTimestamp":"2026-11-28T06:40:07Z","labels":{"app":"web"},"annotations":{"note":"a \"quoted\" } value, managedFields: [x]"},"managedFields":[{"manager":"tether","operation":"Apply","apiVersion":"apps/v1","time":"2026-11-28T06:40:07Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{}}}}}}}}],"finalizers":["x"]},"spec":{"replicas":1,"managedFields":[1,2],"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"registry.example/app:1.0"}]}}},"status":{}}
`

// fromMaps is what NewObject makes of data: decoded, then encoded without
// managedFields.
func fromMaps(t testing.TB, data []byte) (*Object, string) {
	t.Helper()
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: fields}
	obj, err := NewObject(u)
	if err != nil {
		t.Fatal(err)
	}
	return obj, u.GetResourceVersion()
}

// sameObject fails unless a and b decode to the same object with the same UID.
func sameObject(t testing.TB, a, b *Object) {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a.JSON(), &x); err != nil {
		t.Fatalf("%s: %v", a.JSON(), err)
	}
	if err := json.Unmarshal(b.JSON(), &y); err != nil {
		t.Fatalf("%s: %v", b.JSON(), err)
	}
	if !reflect.DeepEqual(x, y) || a.UID() != b.UID() {
		t.Fatalf("the objects differ:\n%s (uid %q)\n%s (uid %q)", a.JSON(), a.UID(), b.JSON(), b.UID())
	}
}

func TestLiveJSONIsTheAnswerWithoutManagedFields(t *testing.T) {
	obj, rv, err := liveJSON([]byte(answer))
	if err != nil {
		t.Fatal(err)
	}
	if rv != "123456" || obj.UID() != "6f1b7c36-5f0e-4f5e-9a55-1b1a1f1e2d3c" {
		t.Fatalf("resourceVersion %q, uid %q", rv, obj.UID())
	}
	want, _ := fromMaps(t, []byte(answer))
	sameObject(t, obj, want)
	live, err := obj.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if live.GetManagedFields() != nil {
		t.Fatalf("managedFields kept: %v", live.GetManagedFields())
	}
	// Only metadata's managedFields go: a field of that name elsewhere stays.
	if got, _, _ := unstructured.NestedSlice(live.Object, "spec", "managedFields"); len(got) != 2 {
		t.Fatalf("spec.managedFields = %v, want [1 2]", got)
	}
	if got := live.GetAnnotations()["note"]; got != `a "quoted" } value, managedFields: [x]` {
		t.Fatalf("annotation read as %q", got)
	}
}

func TestLiveJSONRefusesWhatIsNotAnObjectWithMetadata(t *testing.T) {
	for _, data := range []string{
		``, `null`, `[]`, `"metadata"`, `{}`, `{"metadata":[]}`, `{"metadata":"x"}`,
		`{"metadata":{"uid":1}}`, `{"metadata":{"resourceVersion":null}}`, `{"metadata":{}`, `{"metadata":{}}}`,
	} {
		if obj, rv, err := liveJSON([]byte(data)); err == nil {
			t.Errorf("%s: read as %s (rv %q), want an error", data, obj.JSON(), rv)
		}
	}
}

// FuzzLiveJSON checks liveJSON against decoding and encoding again: whatever the
// JSON, it never panics, and of an object with a metadata object it keeps what
// NewObject keeps.
func FuzzLiveJSON(f *testing.F) {
	f.Add([]byte(answer))
	f.Add([]byte(`{"metadata":{"managedFields":[]}}`))
	f.Add([]byte(` { "metadata" : { "uid" : "a\"b" , "managedFields" : [ {"x":"]"} ] } , "a" : [ 1 , { } ] } `))
	f.Add([]byte(`{"metadata":{"resourceVersion":"\u0031"},"b":-1.5e3,"c":true,"d":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, rv, err := liveJSON(data)
		var top map[string]any
		if json.Unmarshal(data, &top) != nil {
			if err == nil {
				t.Fatalf("%q: not a JSON object, read as %s", data, obj.JSON())
			}
			return
		}
		meta, ok := top["metadata"].(map[string]any)
		if !ok {
			if err == nil {
				t.Fatalf("%q: no metadata object, read as %s", data, obj.JSON())
			}
			return
		}
		if notString(meta, "resourceVersion") || notString(meta, "uid") {
			if err == nil {
				t.Fatalf("%q: resourceVersion or uid not a string, read as %s", data, obj.JSON())
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		want, wantRV := fromMaps(t, data)
		if rv != wantRV {
			t.Fatalf("%q: resourceVersion %q, want %q", data, rv, wantRV)
		}
		sameObject(t, obj, want)
	})
}

// notString reports whether m has key with a value that is not a string.
func notString(m map[string]any, key string) bool {
	v, ok := m[key]
	if !ok {
		return false
	}
	_, isString := v.(string)
	return !isString
}

// BenchmarkKeepingAWritesAnswer compares liveJSON with decoding the answer and
// encoding it again (NewObject), which it replaces in a write.
func BenchmarkKeepingAWritesAnswer(b *testing.B) {
	data := []byte(answer)
	b.Run("decoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fromMaps(b, data)
		}
	})
	b.Run("scanned", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := liveJSON(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A write through the client for raw answers fails as one through the Manager's
// client does: the API server's Status, as the same error.
func TestARawWriteFailsAsADecodedOne(t *testing.T) {
	cfg := controlplane.Shared(t).Config()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts, err := ManagerOptions{}.WithClientsFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	decoded, raw := NewManager(c, ManagerOptions{}), NewManager(c, opts)
	ns := controlplane.NewNamespace(t, cfg)
	invalid := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": ns},
		"spec": map[string]any{"replicas": int64(-1), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "web"}}}}},
	}}
	nowhere := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "web", "namespace": ns + "-not-there"},
	}}
	badName := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "../web", "namespace": ns},
	}}
	for _, obj := range []*unstructured.Unstructured{invalid, nowhere, badName} {
		_, _, want := decoded.patch(t.Context(), obj, "tether")
		data, live, got := raw.patch(t.Context(), obj, "tether")
		if want == nil || got == nil || got.Error() != want.Error() || apierrors.ReasonForError(got) != apierrors.ReasonForError(want) {
			t.Errorf("%s: the raw write failed with %v (%s), want %v (%s)", obj.GetName(), got, apierrors.ReasonForError(got), want, apierrors.ReasonForError(want))
		}
		if data != nil || live != nil {
			t.Errorf("%s: a failed write returned an object", obj.GetName())
		}
	}
}

// What liveJSON keeps is held by the verified cache for as long as the object does
// not change: it must not hold the room of the managedFields it cut.
func TestLiveJSONKeepsNoRoomForWhatItCut(t *testing.T) {
	obj, _, err := liveJSON([]byte(answer))
	if err != nil {
		t.Fatal(err)
	}
	if cap(obj.JSON())-len(obj.JSON()) > 8 {
		t.Fatalf("keeps %d bytes in a buffer of %d", len(obj.JSON()), cap(obj.JSON()))
	}
}
