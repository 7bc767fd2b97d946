package source_test

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
)

// TestSubstitutionRunsBehindTheWall: spec.postBuild's variables are
// substituted in a render worker (a source whose worker cannot start cannot
// substitute), with package substitute's budget there too.
func TestSubstitutionRunsBehindTheWall(t *testing.T) {
	cm := func(value string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "c", "namespace": "apps"},
			"data":     map[string]any{"k": value},
		}}
	}
	snap := &source.Snapshot{Path: "app", Objects: []*unstructured.Unstructured{cm("${greeting}, ${name:=world}")}}
	sub := source.Substitution{Variables: map[string]string{"greeting": "hello"}, FromSecret: true}

	got, err := source.Substitute(snap, sub, source.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(got.Objects[0].Object, "data", "k"); v != "hello, world" {
		t.Errorf("substituted %q; want %q", v, "hello, world")
	}
	if v, _, _ := unstructured.NestedString(snap.Objects[0].Object, "data", "k"); v != "${greeting}, ${name:=world}" {
		t.Errorf("the snapshot given was changed: %q", v)
	}

	refs := strings.Repeat("${big}", 4096)
	_, err = source.Substitute(&source.Snapshot{Path: "app", Objects: []*unstructured.Unstructured{cm(refs)}},
		source.Substitution{Variables: map[string]string{"big": strings.Repeat("x", 64<<10)}}, source.DefaultOptions())
	var re *source.RenderError
	if !errors.As(err, &re) || re.Reason != v1alpha1.ReasonSubstitutionFailed || re.File != "app" || strings.Contains(err.Error(), "xxxx") {
		t.Errorf("a substitution of 256 MiB: %v; want %s naming app, quoting no value", err, v1alpha1.ReasonSubstitutionFailed)
	}

	opts := source.DefaultOptions()
	opts.RenderWorkerPath = t.TempDir() + "/no-worker"
	if _, err := source.Substitute(snap, sub, opts); err == nil || !strings.Contains(err.Error(), "render worker") {
		t.Errorf("a substitution without its worker: %v; want it to fail starting the worker", err)
	}
}
