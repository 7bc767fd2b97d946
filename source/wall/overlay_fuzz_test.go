package wall

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/render"
	"tether.dev/tether/source/result"
)

// FuzzAnOverlayRunsBehindTheWall puts a spec.kustomize with the fuzzer's
// prefix, image and patch on a ConfigMap whose name and value are the
// fuzzer's (the repository's), through the render wall as the agent does:
// whatever they hold, it ends with objects or a result.RenderError, and never with a
// worker that ended for no limit. `go test` runs the seeds; fuzz it with
// go test -run='^$' -fuzz='^FuzzAnOverlayRunsBehindTheWall$' -parallel=1 ./source/.
func FuzzAnOverlayRunsBehindTheWall(f *testing.F) {
	seeds := []struct{ name, value, prefix, image, patch string }{
		{"web", "hello", "p-", "nginx", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"}, "data": {"k": "v"}}`},
		{"web", "${x}", "", "", `[{"op": "copy", "from": "/data", "path": "/metadata/annotations"}]`},
		{"a", "b: &a [1]\nc: [*a, *a]", "../", "::", "a: &a [1,2]\nb: [*a,*a,*a,*a]\n"},
		{"web", "https://example.com/x.yaml", "p", "x=y:z@sha256:1", "resources: [https://example.com]\n"},
		{"", "", "", "", "{"},
	}
	for _, s := range seeds {
		f.Add(s.name, s.value, s.prefix, s.image, s.patch)
	}
	opts := render.DefaultOptions()
	opts.Timeout = 5 * time.Second
	opts.MemoryLimit = 256 << 20
	f.Fuzz(func(t *testing.T, name, value, prefix, image, patch string) {
		cm := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name},
			"data":     map[string]any{"k": value},
		}}
		k := &v1alpha1.Kustomize{NamePrefix: prefix}
		if image != "" {
			k.Images = []v1alpha1.KustomizeImage{{Name: image, NewTag: "1"}}
		}
		if patch != "" {
			k.Patches = []v1alpha1.KustomizePatch{{Patch: patch, Target: &v1alpha1.KustomizeSelector{Kind: "ConfigMap"}}}
		}
		snap, err := Overlay(&result.Snapshot{Path: "apps", Objects: []*unstructured.Unstructured{cm}}, k, opts)
		var re *result.RenderError
		switch {
		case err == nil:
			if held := heldSizeOf(snap.Objects); held > opts.MaxRenderedBytes*8 {
				t.Fatalf("the overlay answered %d bytes of objects, over its bound", held)
			}
		case !errors.As(err, &re):
			t.Fatalf("an overlay failed with %T, not a RenderError: %v", err, err)
		case errors.Is(err, ErrRenderWorker):
			t.Fatalf("the worker ended for no limit: %v", err)
		}
	})
}
