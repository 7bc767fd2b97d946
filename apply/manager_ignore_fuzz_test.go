package apply

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
)

func sampleObject() map[string]any {
	return map[string]any{
		"spec": map[string]any{
			"replicas": int64(3),
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "app", "image": "nginx:1"},
				map[string]any{"name": "sidecar", "image": "envoy:1"},
			}}},
			"args": []any{"a", "b"},
		},
		"metadata": map[string]any{"annotations": map[string]any{"a/b": "x", "c~d": "y"}},
	}
}

func TestPointerPath(t *testing.T) {
	for ptr, want := range map[string]string{
		"/spec/replicas":                         "spec.replicas",
		"/spec/template/spec/containers/1/image": `spec.template.spec.containers[name="sidecar"].image`,
		"/spec/args/1":                           "spec.args[1]",
		"/metadata/annotations/a~1b":             "metadata.annotations.a/b",
		"/metadata/annotations/c~0d":             "metadata.annotations.c~d",
		"/spec/template/spec/containers/9/image": "(invalid)",
		"spec/replicas":                          "(invalid)",
		"/spec/notThere/deeper":                  "spec.notThere.deeper",
	} {
		got := "(invalid)"
		if p, ok := pointerPath(ptr, sampleObject()); ok {
			got = p.String()[1:]
		}
		if got != want {
			t.Errorf("pointerPath(%q) = %s, want %s", ptr, got, want)
		}
	}
}

func TestRemovePathRoundTripsWithPointerOf(t *testing.T) {
	obj := sampleObject()
	p, _ := pointerPath("/spec/template/spec/containers/1", obj)
	if ptr, ok := pointerOf(obj, p); !ok || ptr != "/spec/template/spec/containers/1" {
		t.Errorf("pointerOf = %q %v", ptr, ok)
	}
	removePath(obj, p)
	containers := obj["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"]
	if diff := cmp.Diff([]any{map[string]any{"name": "app", "image": "nginx:1"}}, containers); diff != "" {
		t.Errorf("containers after removing the sidecar (-want +got):\n%s", diff)
	}
}

// FuzzPointerPath: pointers come from users' Syncs; none may panic, and removing
// what one names never touches anything else than that field.
func FuzzPointerPath(f *testing.F) {
	for _, seed := range []string{"/spec/replicas", "/spec/template/spec/containers/0/image", "/spec/args/7", "/", "//", "/a~2b", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(_ *testing.T, ptr string) {
		obj := sampleObject()
		p, ok := pointerPath(ptr, obj)
		if !ok {
			return
		}
		_, _ = lookupPath(obj, p)
		_, _ = pointerOf(obj, p)
		removePath(obj, p)
		setPath(obj, p, runtime.DeepCopyJSONValue(int64(1)))
	})
}
