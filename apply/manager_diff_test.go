package apply_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/apply"
)

func parse(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestCompare(t *testing.T) {
	live := `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: prod
  uid: 1234
  resourceVersion: "41"
  generation: 3
  creationTimestamp: "2026-01-01T00:00:00Z"
  labels: {app: web, tier: front}
  annotations: {deployment.kubernetes.io/revision: "3"}
  managedFields: [{manager: tether, operation: Apply}]
spec:
  replicas: 2
  template:
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
status: {replicas: 2, readyReplicas: 1}
`
	cases := []struct {
		name    string
		desired string
		want    []string
	}{
		{"metadata noise and status are ignored", `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: prod
  uid: 1234
  resourceVersion: "42"
  generation: 4
  creationTimestamp: "2026-01-01T00:00:00Z"
  labels: {app: web, tier: front}
  annotations: {deployment.kubernetes.io/revision: "3"}
  managedFields: [{manager: tether, operation: Apply}, {manager: kubectl, operation: Update}]
spec:
  replicas: 2
  template:
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
status: {replicas: 3}
`, nil},
		{"labels and annotations are compared key by key, lists as a whole", `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: prod
  labels: {app: web, tier: back}
  annotations: {deployment.kubernetes.io/revision: "3", owner: team-a}
spec:
  replicas: 5
  template:
    spec:
      containers: [{name: web, image: "nginx:1.28"}]
`, []string{"metadata.annotations.owner", "metadata.labels.tier", "spec.replicas", "spec.template.spec.containers"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, apply.Compare(parse(t, tc.desired), parse(t, live))); diff != "" {
				t.Errorf("Compare (-want +got):\n%s", diff)
			}
		})
	}
}
