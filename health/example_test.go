package health_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/health"
)

// Compute judges one object from what the cluster says of it; no client is
// involved. A Deployment whose new pods are not all available yet is still
// rolling out.
func ExampleCompute() {
	deploy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": "web", "namespace": "shop", "generation": int64(2)},
		"spec":       map[string]any{"replicas": int64(3)},
		"status": map[string]any{
			"observedGeneration": int64(2),
			"replicas":           int64(3),
			"updatedReplicas":    int64(1),
			"availableReplicas":  int64(2),
		},
	}}
	r := health.Compute(deploy)
	fmt.Println(r.Code)
	// Output:
	// Progressing
}

// A Sync's health is the worst of its objects'.
func ExampleAggregate() {
	fmt.Println(health.Aggregate(v1alpha1.HealthHealthy, v1alpha1.HealthProgressing, v1alpha1.HealthDegraded))
	// Output:
	// Degraded
}

// A kind without a reader of its own is judged by CEL expressions of the Sync's
// spec.healthChecks.
func ExampleNewChecker() {
	checker, err := health.NewChecker([]v1alpha1.HealthCheck{{
		APIVersion: "cert-manager.io/v1",
		Kind:       "Certificate",
		Current:    "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
		Failed:     "status.conditions.exists(c, c.type == 'Ready' && c.status == 'False' && c.reason == 'Failed')",
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	cert := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1",
		"kind":       "Certificate",
		"metadata":   map[string]any{"name": "web"},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": "True"},
		}},
	}}
	fmt.Println(checker.Compute(cert).Code)
	// Output:
	// Healthy
}
