package health

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
)

// The fixtures in testdata/<kind>/ are live objects captured from the control plane
// of test/rollout (kube-apiserver, kube-controller-manager, kube-scheduler and
// kwok) in the states the rollout tests reach, with the pods they select after
// them: regenerate them with
//
//	go test ./test/rollout -args -capture $PWD/health/testdata
//
// Where no controller of that control plane writes a state (a load balancer's or an
// ingress's address, a CronJob's missed schedule), the test wrote the status
// through the status subresource, as that controller would, and the fixture's
// second line says so; so does it where a test double stands in for an add-on (the
// resource metrics API, for the autoscalers and the metrics APIService), or where
// the object is the API server's answer to its creation (the Progressing
// autoscaler, APIService and CRD, before their controllers saw them). None is
// written by hand.
func TestReadersOnFixtures(t *testing.T) {
	cases := []struct {
		file string
		// objectOnly judges the object without the pods captured with it.
		objectOnly bool
		want       v1alpha1.HealthStatusCode
		// says is part of the message, when there is one to check.
		says string
	}{
		{file: "pod/healthy-running.yaml", want: v1alpha1.HealthHealthy},
		{file: "pod/progressing-never-ready.yaml", want: v1alpha1.HealthProgressing, says: "container app not ready"},
		{file: "pod/degraded-crashloopbackoff.yaml", want: v1alpha1.HealthDegraded, says: "container app: CrashLoopBackOff"},
		{file: "pod/degraded-imagepullbackoff.yaml", want: v1alpha1.HealthDegraded, says: "container app: ImagePullBackOff"},

		{file: "deployment/healthy-rolled-out.yaml", want: v1alpha1.HealthHealthy},
		{file: "deployment/progressing-crashloopbackoff-without-pods.yaml", want: v1alpha1.HealthProgressing, says: "0 of 1 updated replicas available"},
		{file: "deployment/degraded-crashloopbackoff.yaml", want: v1alpha1.HealthDegraded, says: "container app: CrashLoopBackOff"},
		{file: "deployment/progressing-imagepullbackoff-without-pods.yaml", want: v1alpha1.HealthProgressing, says: "0 of 1 updated replicas available"},
		{file: "deployment/degraded-imagepullbackoff.yaml", want: v1alpha1.HealthDegraded, says: "container app: ImagePullBackOff"},
		{file: "deployment/degraded-progress-deadline.yaml", want: v1alpha1.HealthDegraded, says: "ProgressDeadlineExceeded"},
		{file: "deployment/degraded-progress-deadline.yaml", objectOnly: true, want: v1alpha1.HealthDegraded, says: "has timed out progressing"},
		{file: "deployment/suspended-paused.yaml", want: v1alpha1.HealthSuspended, says: "paused"},

		{file: "statefulset/healthy-ready.yaml", want: v1alpha1.HealthHealthy},
		{file: "statefulset/healthy-partitioned.yaml", want: v1alpha1.HealthHealthy, says: "partitioned rollout done"},
		{file: "statefulset/degraded-crashloopbackoff.yaml", objectOnly: true, want: v1alpha1.HealthProgressing, says: "0 of 1 replicas ready"},
		{file: "statefulset/degraded-crashloopbackoff.yaml", want: v1alpha1.HealthDegraded, says: "pod crash-0: container app: CrashLoopBackOff"},

		{file: "daemonset/healthy-ready.yaml", want: v1alpha1.HealthHealthy},
		{file: "daemonset/progressing-never-ready.yaml", want: v1alpha1.HealthProgressing, says: "container app not ready"},
		{file: "daemonset/degraded-crashloopbackoff.yaml", objectOnly: true, want: v1alpha1.HealthProgressing, says: "0 of 1 nodes available"},
		{file: "daemonset/degraded-crashloopbackoff.yaml", want: v1alpha1.HealthDegraded, says: "container app: CrashLoopBackOff"},

		{file: "job/healthy-complete.yaml", want: v1alpha1.HealthHealthy},
		{file: "job/progressing-running.yaml", want: v1alpha1.HealthProgressing, says: "1 active"},
		{file: "job/degraded-backoff-limit.yaml", want: v1alpha1.HealthDegraded, says: "BackoffLimitExceeded"},
		{file: "job/suspended.yaml", want: v1alpha1.HealthSuspended},
		{file: "cronjob/healthy-scheduled.yaml", want: v1alpha1.HealthHealthy},
		{file: "cronjob/suspended.yaml", want: v1alpha1.HealthSuspended},
		{file: "cronjob/healthy-last-job-succeeded.yaml", want: v1alpha1.HealthHealthy},
		{file: "cronjob/degraded-last-job-failed.yaml", want: v1alpha1.HealthDegraded, says: "did not succeed"},

		{file: "persistentvolumeclaim/healthy-bound.yaml", want: v1alpha1.HealthHealthy},
		{file: "persistentvolumeclaim/progressing-unbound.yaml", want: v1alpha1.HealthProgressing, says: "storage class no-such-class"},
		{file: "persistentvolumeclaim/degraded-lost.yaml", want: v1alpha1.HealthDegraded, says: "lost"},

		{file: "service/healthy-cluster-ip.yaml", want: v1alpha1.HealthHealthy},
		{file: "service/healthy-address.yaml", want: v1alpha1.HealthHealthy},
		{file: "service/progressing-no-address.yaml", want: v1alpha1.HealthProgressing, says: "load balancer"},
		{file: "ingress/healthy-address.yaml", want: v1alpha1.HealthHealthy},
		{file: "ingress/progressing-no-address.yaml", want: v1alpha1.HealthProgressing, says: "address"},

		{file: "horizontalpodautoscaler/healthy-scaling.yaml", want: v1alpha1.HealthHealthy},
		{file: "horizontalpodautoscaler/progressing-not-assessed.yaml", want: v1alpha1.HealthProgressing},
		{file: "horizontalpodautoscaler/degraded-no-metrics.yaml", want: v1alpha1.HealthDegraded, says: "FailedGetResourceMetric"},
		{file: "horizontalpodautoscaler/suspended-target-scaled-to-zero.yaml", want: v1alpha1.HealthSuspended, says: "ScalingDisabled"},

		{file: "apiservice/healthy-available.yaml", want: v1alpha1.HealthHealthy},
		{file: "apiservice/healthy-local.yaml", want: v1alpha1.HealthHealthy},
		{file: "apiservice/progressing-not-assessed.yaml", want: v1alpha1.HealthProgressing},
		{file: "apiservice/degraded-service-not-found.yaml", want: v1alpha1.HealthDegraded, says: "ServiceNotFound"},

		{file: "customresourcedefinition/healthy-established.yaml", want: v1alpha1.HealthHealthy},
		{file: "customresourcedefinition/progressing-not-established.yaml", want: v1alpha1.HealthProgressing},
		{file: "customresourcedefinition/degraded-names-conflict.yaml", want: v1alpha1.HealthDegraded, says: "KindConflict"},
	}
	for _, tc := range cases {
		name := tc.file
		if tc.objectOnly {
			name += " without its pods"
		}
		t.Run(name, func(t *testing.T) {
			docs := fixture(t, tc.file)
			obj, pods := docs[0], docs[1:]
			if tc.objectOnly {
				pods = nil
			}
			got := Compute(obj, pods...)
			if got.Code != tc.want {
				t.Errorf("Compute() = %s (%q), want %s", got.Code, got.Message, tc.want)
			}
			if got.Code != v1alpha1.HealthHealthy && got.Message == "" {
				t.Errorf("Compute() = %s with no message; a verdict other than Healthy must say why", got.Code)
			}
			if !strings.Contains(got.Message, tc.says) {
				t.Errorf("Compute() says %q, want it to say %q", got.Message, tc.says)
			}
		})
	}
}

// TestEveryFixtureIsJudged keeps the table above complete: a fixture added to
// testdata/ without a case would prove nothing.
func TestEveryFixtureIsJudged(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("readers_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		rel, _ := filepath.Rel("testdata", f)
		if !strings.Contains(string(src), `"`+filepath.ToSlash(rel)+`"`) {
			t.Errorf("%s has no case in TestReadersOnFixtures", f)
		}
	}
}

// fixture reads a YAML stream of testdata.
func fixture(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(data), "\n---\n") {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
	return out
}
