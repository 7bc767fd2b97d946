package health_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/health"
)

// A bare ReplicaSet (a wave may hold one) is Healthy only once its replicas are
// available, not as soon as it exists.
func TestABareReplicaSetIsHealthyOnceItsReplicasAreAvailable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc string
		want      v1alpha1.HealthStatusCode
	}{
		{"not observed yet", "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs, generation: 2}\nspec: {replicas: 2}\nstatus: {observedGeneration: 1, availableReplicas: 2}\n", v1alpha1.HealthProgressing},
		{"replicas not available yet", "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs, generation: 1}\nspec: {replicas: 2}\nstatus: {observedGeneration: 1, availableReplicas: 1}\n", v1alpha1.HealthProgressing},
		{"every replica available", "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs, generation: 1}\nspec: {replicas: 2}\nstatus: {observedGeneration: 1, availableReplicas: 2}\n", v1alpha1.HealthHealthy},
		{"pods refused", "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs, generation: 1}\nspec: {replicas: 2}\nstatus: {observedGeneration: 1, conditions: [{type: ReplicaFailure, status: \"True\", reason: FailedCreate, message: quota exceeded}]}\n", v1alpha1.HealthDegraded},
		{"a ReplicationController alike", "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: rc, generation: 1}\nspec: {replicas: 1, selector: {app: a}}\nstatus: {observedGeneration: 1}\n", v1alpha1.HealthProgressing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data, err := yaml.YAMLToJSON([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(data); err != nil {
				t.Fatal(err)
			}
			if got := health.Compute(obj); got.Code != tt.want {
				t.Errorf("Compute() = %s (%s), want %s", got.Code, got.Message, tt.want)
			}
		})
	}
}
