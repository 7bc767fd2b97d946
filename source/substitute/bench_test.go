package substitute_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/source/substitute"
)

// BenchmarkObjects measures what substitution adds to a reconcile of a Sync
// with spec.postBuild: 1,000 Deployments-sized objects, half of them with a
// variable, half without (written as YAML to be looked at, not copied).
func BenchmarkObjects(b *testing.B) {
	objs := make([]*unstructured.Unstructured, 1000)
	for i := range objs {
		image := "registry.example.com/app:1.0"
		if i%2 == 0 {
			image = "registry.example.com/app:${version:=1.0}"
		}
		objs[i] = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": fmt.Sprintf("app-%d", i), "labels": map[string]any{"app": "web", "tier": "frontend"}},
			"spec": map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "app", "image": image, "ports": []any{map[string]any{"containerPort": int64(8080)}}}},
			}}},
		}}
	}
	opts := substitute.DefaultOptions()
	opts.Variables = map[string]string{"version": "2.0", "cluster": "prod"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := substitute.Objects(objs, opts); err != nil {
			b.Fatal(err)
		}
	}
}
