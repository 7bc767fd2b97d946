package wall

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"tether.dev/tether/source/render"

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
// measures a revision's objects to take on the heap as the render cache holds
// them (compact): the cache's bound (--render-cache-bytes) is then the memory
// it holds. It logs what the same objects take decoded, which the cache held
// before and which is several times more.
func TestTheRenderCacheCountsWhatItHolds(t *testing.T) {
	data := manifestsOfApps(500)
	var objs []*unstructured.Unstructured
	decoded, _ := heapTakenBy(t, func() any {
		var err error
		if objs, err = render.DecodeManifests([]byte(data)); err != nil {
			t.Fatal(err)
		}
		return objs
	})
	measured, held := heapTakenBy(t, func() any {
		held, err := compact(objs)
		if err != nil {
			t.Fatal(err)
		}
		return held
	})
	estimate := heldSize(held.(compactObjects))
	t.Logf("%d objects: %d KiB held on the heap, counted %d KiB (%.2f); %d KiB decoded (%.1f× more)",
		len(objs), measured>>10, estimate>>10, float64(estimate)/float64(measured), decoded>>10, float64(decoded)/float64(measured))
	if ratio := float64(estimate) / float64(measured); ratio < 0.75 || ratio > 1.25 {
		t.Errorf("heldSize says %d bytes; the runtime measures %d (ratio %.2f, want within 0.75..1.25)", estimate, measured, ratio)
	}
	if decoded < 3*measured {
		t.Errorf("the cache holds %d bytes for objects that take %d decoded: not compact", measured, decoded)
	}
}

// TestAHitOfTheRenderCacheIsTheRenderAndTheCallersOwn: a hit decodes the
// objects the render made (integers as integers, as DecodeManifests makes
// them), and a caller changing them changes nothing another hit returns.
func TestAHitOfTheRenderCacheIsTheRenderAndTheCallersOwn(t *testing.T) {
	objs, err := render.DecodeManifests([]byte(manifestsOfApps(2)))
	if err != nil {
		t.Fatal(err)
	}
	want, err := render.DecodeManifests([]byte(manifestsOfApps(2)))
	if err != nil {
		t.Fatal(err)
	}
	c := NewCache(1 << 30)
	c.Put("rev", "", Rendered{objs: objs})
	first, ok := c.Get("rev")
	if !ok {
		t.Fatal("the render was not kept")
	}
	if diff := cmp.Diff(want, first.objs); diff != "" {
		t.Errorf("a hit is not the render (-want +got):\n%s", diff)
	}
	for _, o := range first.objs {
		if err := unstructured.SetNestedField(o.Object, "changed", "metadata", "labels", "team"); err != nil {
			t.Fatal(err)
		}
	}
	second, _ := c.Get("rev")
	if diff := cmp.Diff(want, second.objs); diff != "" {
		t.Errorf("a caller's change reached the next hit (-want +got):\n%s", diff)
	}
}

// heldSizeOf is what the render cache counts for objs.
func heldSizeOf(objs []*unstructured.Unstructured) int64 {
	held, err := compact(objs)
	if err != nil {
		panic(err)
	}
	return heldSize(held)
}

// heapTakenBy returns what make's result takes on the heap once the garbage of
// making it is collected, and the result.
func heapTakenBy(t *testing.T, make func() any) (int64, any) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := make()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc), v
}
