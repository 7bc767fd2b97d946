package source

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// manifestsOfApps is a revision of n apps, each a Deployment, a Service, a
// ServiceAccount and a ConfigMap, as people write them.
func manifestsOfApps(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `---
apiVersion: v1
kind: ServiceAccount
metadata: {name: app-%[1]d, labels: {app.kubernetes.io/name: app-%[1]d, team: payments}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: app-%[1]d-config, annotations: {owner: "team payments <payments@example.com>"}}
data:
  LOG_LEVEL: info
  FEATURE_FLAGS: "checkout-v2,fast-refunds,new-ledger"
  config.yaml: |
    server:
      port: 8080
      timeout: 30s
    database:
      host: db.payments.svc
      pool: 20
---
apiVersion: v1
kind: Service
metadata: {name: app-%[1]d}
spec:
  selector: {app.kubernetes.io/name: app-%[1]d}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app-%[1]d, labels: {app.kubernetes.io/name: app-%[1]d}}
spec:
  replicas: 3
  revisionHistoryLimit: 5
  selector: {matchLabels: {app.kubernetes.io/name: app-%[1]d}}
  template:
    metadata: {labels: {app.kubernetes.io/name: app-%[1]d}}
    spec:
      serviceAccountName: app-%[1]d
      containers:
      - name: app
        image: registry.example.com/payments/app-%[1]d:v1.%[1]d.0
        args: [--config, /etc/app/config.yaml, --verbose]
        ports: [{containerPort: 8080, name: http}]
        env:
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: GOMAXPROCS, value: "2"}
        resources:
          requests: {cpu: 100m, memory: 128Mi}
          limits: {memory: 256Mi}
        readinessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 5}
        volumeMounts: [{name: config, mountPath: /etc/app}]
      volumes: [{name: config, configMap: {name: app-%[1]d-config}}]
`, i)
	}
	return b.String()
}

// TestTheRenderCacheCountsWhatItHolds compares heldSize with what the runtime
// measures the decoded objects of a revision to take on the heap: the render
// cache's bound (--render-cache-bytes) is then the memory it holds, not the JSON
// size of the objects, which is several times smaller.
func TestTheRenderCacheCountsWhatItHolds(t *testing.T) {
	data := manifestsOfApps(500)
	measured, objs := heapTakenBy(t, func() []*unstructured.Unstructured {
		objs, err := DecodeManifests([]byte(data))
		if err != nil {
			t.Fatal(err)
		}
		return objs
	})
	estimate := heldSize(objs)
	asJSON := int64(0)
	for _, o := range objs {
		b, err := json.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		asJSON += int64(len(b))
	}
	t.Logf("%d objects: %d KiB on the heap, estimated %d KiB (%.2f), %d KiB as JSON (%.1f× smaller)",
		len(objs), measured>>10, estimate>>10, float64(estimate)/float64(measured), asJSON>>10, float64(measured)/float64(asJSON))
	if ratio := float64(estimate) / float64(measured); ratio < 0.75 || ratio > 1.25 {
		t.Errorf("heldSize says %d bytes; the runtime measures %d (ratio %.2f, want within 0.75..1.25)", estimate, measured, ratio)
	}
}

// heapTakenBy returns what make's result takes on the heap once the garbage of
// making it is collected, and the result.
func heapTakenBy(t *testing.T, make func() []*unstructured.Unstructured) (int64, []*unstructured.Unstructured) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	objs := make()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(objs)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc), objs
}
