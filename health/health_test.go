package health

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
)

func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestCompute(t *testing.T) {
	cases := []struct {
		name     string
		manifest string
		want     v1alpha1.HealthStatusCode
	}{
		{"a ConfigMap is healthy once it exists", `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: "n"}
`, v1alpha1.HealthHealthy},
		{"a Deployment rolling out is progressing", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: "n", generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: 3, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1}
`, v1alpha1.HealthProgressing},
		{"a Deployment whose status lags its spec is progressing", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: "n", generation: 3}
spec: {replicas: 1}
status: {observedGeneration: 2, replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1}
`, v1alpha1.HealthProgressing},
		{"a rolled-out Deployment is healthy", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: "n", generation: 2}
spec: {replicas: 2}
status:
  observedGeneration: 2
  replicas: 2
  updatedReplicas: 2
  readyReplicas: 2
  availableReplicas: 2
  conditions:
  - {type: Available, status: "True"}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
`, v1alpha1.HealthHealthy},
		{"a custom resource that is Stalled is degraded", `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: "n", generation: 1}
status:
  observedGeneration: 1
  conditions:
  - {type: Stalled, status: "True", reason: BadConfig, message: "bad config"}
`, v1alpha1.HealthDegraded},
		{"a failed Job is degraded", `
apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: "n"}
spec: {completions: 1}
status:
  failed: 1
  conditions:
  - {type: Failed, status: "True", reason: BackoffLimitExceeded, message: "Job has reached the specified backoff limit"}
`, v1alpha1.HealthDegraded},
		{"a CronJob whose run failed after an earlier success is degraded", `
apiVersion: batch/v1
kind: CronJob
metadata: {name: c, namespace: "n"}
spec: {schedule: "0 * * * *"}
status: {lastScheduleTime: "2026-11-23T12:00:00Z", lastSuccessfulTime: "2026-11-23T11:00:07Z"}
`, v1alpha1.HealthDegraded},
		{"a CronJob running again after a failed run is healthy", `
apiVersion: batch/v1
kind: CronJob
metadata: {name: c, namespace: "n"}
spec: {schedule: "0 * * * *"}
status:
  lastScheduleTime: "2026-11-23T13:00:00Z"
  lastSuccessfulTime: "2026-11-23T11:00:07Z"
  active: [{apiVersion: batch/v1, kind: Job, namespace: "n", name: c-29400000}]
`, v1alpha1.HealthHealthy},
		{"a CronJob never scheduled is healthy", `
apiVersion: batch/v1
kind: CronJob
metadata: {name: c, namespace: "n"}
spec: {schedule: "0 * * * *"}
`, v1alpha1.HealthHealthy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := Compute(object(t, tc.manifest))
			got, msg := res.Code, res.Message
			if got != tc.want {
				t.Errorf("Compute() = %s (%q), want %s", got, msg, tc.want)
			}
			if got != v1alpha1.HealthHealthy && msg == "" {
				t.Errorf("Compute() = %s with no message; a non-healthy verdict must say why", got)
			}
		})
	}
	t.Run("a missing object is missing", func(t *testing.T) {
		if got := Compute(nil).Code; got != v1alpha1.HealthMissing {
			t.Errorf("Compute(nil) = %s, want Missing", got)
		}
	})
}

func TestAggregate(t *testing.T) {
	cases := []struct {
		name  string
		codes []v1alpha1.HealthStatusCode
		want  v1alpha1.HealthStatusCode
	}{
		{"nothing managed is healthy", nil, v1alpha1.HealthHealthy},
		{"all healthy", []v1alpha1.HealthStatusCode{v1alpha1.HealthHealthy, v1alpha1.HealthHealthy}, v1alpha1.HealthHealthy},
		{"one progressing", []v1alpha1.HealthStatusCode{v1alpha1.HealthHealthy, v1alpha1.HealthProgressing}, v1alpha1.HealthProgressing},
		{"degraded beats missing and progressing", []v1alpha1.HealthStatusCode{v1alpha1.HealthMissing, v1alpha1.HealthDegraded, v1alpha1.HealthProgressing}, v1alpha1.HealthDegraded},
		{"missing beats progressing", []v1alpha1.HealthStatusCode{v1alpha1.HealthProgressing, v1alpha1.HealthMissing}, v1alpha1.HealthMissing},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Aggregate(tc.codes...); got != tc.want {
				t.Errorf("Aggregate(%v) = %s, want %s", tc.codes, got, tc.want)
			}
		})
	}
}

func TestWantsPodsOnceTheControllerObservedTheSpec(t *testing.T) {
	for _, tc := range []struct {
		name, manifest string
		want           bool
	}{
		{"a Deployment its controller has not seen", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: n, generation: 1}
`, false},
		{"a Deployment whose new spec its controller has not seen", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: n, generation: 3}
status: {observedGeneration: 2}
`, false},
		{"a Deployment rolling out its current spec", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: n, generation: 3}
status: {observedGeneration: 3, replicas: 2}
`, true},
		{"a StatefulSet rolling out its current spec", `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: n, generation: 1}
status: {observedGeneration: 1}
`, true},
		{"a Job, which has no observedGeneration", `
apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: n, generation: 1}
`, true},
		{"a ConfigMap", `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: n}
`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := WantsPods(object(t, tc.manifest)); got != tc.want {
				t.Errorf("WantsPods = %t, want %t", got, tc.want)
			}
		})
	}
	if WantsPods(nil) {
		t.Error("WantsPods(nil) = true, want false: a missing object has no pods to read")
	}
}

func TestARolloutSaysHowManyOldReplicasAreLeft(t *testing.T) {
	for _, tc := range []struct {
		replicas int
		want     string
	}{{4, "1 old replica pending termination"}, {5, "2 old replicas pending termination"}} {
		obj := object(t, fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: "n", generation: 2}
spec: {replicas: 3}
status: {observedGeneration: 2, replicas: %d, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3}
`, tc.replicas))
		if got := Compute(obj); got.Message != tc.want {
			t.Errorf("%d replicas, 3 updated: message %q, want %q", tc.replicas, got.Message, tc.want)
		}
	}
}
