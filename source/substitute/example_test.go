package substitute_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/source/substitute"
)

func ExampleObjects() {
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata": map[string]any{
			"name":   "apps",
			"labels": map[string]any{"environment": "${cluster_env:=dev}", "region": "${cluster_region}"},
		},
	}}
	opts := substitute.DefaultOptions()
	opts.Variables = map[string]string{"cluster_region": "eu-central-1"}
	opts.Strict = true
	out, err := substitute.Objects([]*unstructured.Unstructured{ns}, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out[0].GetLabels())

	opts.Variables = map[string]string{"cluster_env": "prod"}
	_, err = substitute.Objects([]*unstructured.Unstructured{ns}, opts)
	fmt.Println(err)
	// Output:
	// map[environment:dev region:eu-central-1]
	// Namespace/apps: variable "cluster_region": variable is not set (strict mode) and the reference gives no default
}
