package health

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"tether.dev/tether/api/v1alpha1"
)

// Result is the verdict on one object: its health code and a short message saying
// why, empty when there is nothing to say.
type Result struct {
	Code    v1alpha1.HealthStatusCode
	Message string
}

func result(code v1alpha1.HealthStatusCode, format string, args ...any) Result {
	return Result{Code: code, Message: fmt.Sprintf(format, args...)}
}

var healthy = Result{Code: v1alpha1.HealthHealthy}

// reader judges one kind of object. It is given the live object and the pods it
// owns, when the caller had them (see Compute).
type reader func(obj *unstructured.Unstructured, pods []*unstructured.Unstructured) (Result, error)

// readers are the built-in readers, by kind: where kstatus is coarse (a paused or
// partitioned rollout, a suspended Job, a container in CrashLoopBackOff, an unbound
// claim, a load balancer with no address), they say more.
var readers = map[schema.GroupKind]reader{
	{Kind: "Pod"}:                                                     withoutPods(readPod),
	{Kind: "PersistentVolumeClaim"}:                                   withoutPods(readPVC),
	{Kind: "Service"}:                                                 withoutPods(readService),
	{Group: "apps", Kind: "Deployment"}:                               readDeployment,
	{Group: "apps", Kind: "StatefulSet"}:                              readStatefulSet,
	{Group: "apps", Kind: "DaemonSet"}:                                readDaemonSet,
	{Group: "apps", Kind: "ReplicaSet"}:                               withoutPods(readReplicaSet),
	{Kind: "ReplicationController"}:                                   withoutPods(readReplicaSet),
	{Group: "batch", Kind: "Job"}:                                     readJob,
	{Group: "batch", Kind: "CronJob"}:                                 withoutPods(readCronJob),
	{Group: "networking.k8s.io", Kind: "Ingress"}:                     withoutPods(readIngress),
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}:           withoutPods(readHPA),
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:             withoutPods(readAPIService),
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: withoutPods(readCRD),
}

func withoutPods(f func(*unstructured.Unstructured) (Result, error)) reader {
	return func(obj *unstructured.Unstructured, _ []*unstructured.Unstructured) (Result, error) { return f(obj) }
}

// HasPods reports whether the health of obj's kind is told more precisely with the
// pods it owns passed to Compute: the workloads, whose pods name the container
// that keeps a rollout from finishing.
func HasPods(gk schema.GroupKind) bool {
	switch gk {
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}, schema.GroupKind{Group: "apps", Kind: "StatefulSet"},
		schema.GroupKind{Group: "apps", Kind: "DaemonSet"}, schema.GroupKind{Group: "batch", Kind: "Job"}:
		return true
	}
	return false
}

// WantsPods reports whether the pods of obj can tell more of its health than obj
// itself: it is a workload (HasPods) whose controller has observed its current
// spec. Until then its reader says that it waits for the controller, and its pods,
// if any, are those of an older spec: listing them would cost a request and tell
// nothing. (A Job has no observedGeneration; its pods are always its own.)
func WantsPods(obj *unstructured.Unstructured) bool {
	if obj == nil {
		return false
	}
	gk := obj.GroupVersionKind().GroupKind()
	if !HasPods(gk) {
		return false
	}
	if gk == (schema.GroupKind{Group: "batch", Kind: "Job"}) {
		return true
	}
	observed, found, err := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	return err == nil && found && observed >= obj.GetGeneration()
}

// Compute returns the health of one live object. A nil object is Missing. pods,
// optional, are the pods the object owns (for the kinds HasPods names): a workload
// whose rollout is stuck on a container in CrashLoopBackOff or ImagePullBackOff is
// Degraded at once, with the pod and container named, instead of Progressing until
// its progress deadline.
//
// An object being deleted is Progressing. The built-in readers judge the kinds they
// know; any other object is judged by its conditions (Ready, Stalled, Reconciling,
// the conventions of kstatus and of Flux and Crossplane resources), and an object
// with no conditions is Healthy once it exists.
func Compute(obj *unstructured.Unstructured, pods ...*unstructured.Unstructured) Result {
	if obj == nil {
		return Result{Code: v1alpha1.HealthMissing, Message: "object does not exist"}
	}
	if obj.GetDeletionTimestamp() != nil {
		return Result{Code: v1alpha1.HealthProgressing, Message: "being deleted"}
	}
	read, ok := readers[obj.GroupVersionKind().GroupKind()]
	if !ok {
		read = withoutPods(readConditions)
	}
	res, err := read(obj, pods)
	if err != nil {
		return Result{Code: v1alpha1.HealthUnknown, Message: fmt.Sprintf("cannot assess health: %v", err)}
	}
	return res
}

// fromKstatus maps a kstatus verdict onto Tether's health codes, for the objects no
// reader has more to say about.
func fromKstatus(obj *unstructured.Unstructured) (Result, error) {
	res, err := kstatus.Compute(obj)
	if err != nil {
		return Result{}, err
	}
	switch res.Status {
	case kstatus.CurrentStatus:
		return healthy, nil
	case kstatus.InProgressStatus, kstatus.TerminatingStatus:
		return Result{Code: v1alpha1.HealthProgressing, Message: res.Message}, nil
	case kstatus.FailedStatus:
		return Result{Code: v1alpha1.HealthDegraded, Message: res.Message}, nil
	case kstatus.NotFoundStatus:
		return Result{Code: v1alpha1.HealthMissing, Message: res.Message}, nil
	}
	return Result{Code: v1alpha1.HealthUnknown, Message: res.Message}, nil
}

// typed converts obj into the typed object into.
func typed(obj *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
		return fmt.Errorf("reading %s: %w", obj.GetKind(), err)
	}
	return nil
}

// severity orders health codes from best to worst for aggregation.
var severity = map[v1alpha1.HealthStatusCode]int{
	v1alpha1.HealthHealthy:     0,
	v1alpha1.HealthSuspended:   1,
	v1alpha1.HealthProgressing: 2,
	v1alpha1.HealthUnknown:     3,
	v1alpha1.HealthMissing:     4,
	v1alpha1.HealthDegraded:    5,
}

// Aggregate returns the worst of codes; no codes at all is Healthy (an empty Sync
// has nothing that could be unhealthy).
func Aggregate(codes ...v1alpha1.HealthStatusCode) v1alpha1.HealthStatusCode {
	worst := v1alpha1.HealthHealthy
	for _, c := range codes {
		if severity[c] > severity[worst] {
			worst = c
		}
	}
	return worst
}

// Severity ranks a health code: the higher, the worse. Aggregate keeps the highest.
func Severity(code v1alpha1.HealthStatusCode) int { return severity[code] }
