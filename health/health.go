package health

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"tether.dev/tether/api/v1alpha1"
)

// Compute returns the health of one live object and a short message saying why,
// empty when there is nothing to say. A nil object is Missing.
func Compute(obj *unstructured.Unstructured) (v1alpha1.HealthStatusCode, string) {
	if obj == nil {
		return v1alpha1.HealthMissing, "object does not exist"
	}
	res, err := kstatus.Compute(obj)
	if err != nil {
		return v1alpha1.HealthUnknown, fmt.Sprintf("cannot assess health: %v", err)
	}
	switch res.Status {
	case kstatus.CurrentStatus:
		return v1alpha1.HealthHealthy, ""
	case kstatus.InProgressStatus:
		return v1alpha1.HealthProgressing, res.Message
	case kstatus.FailedStatus:
		return v1alpha1.HealthDegraded, res.Message
	case kstatus.TerminatingStatus:
		return v1alpha1.HealthProgressing, res.Message
	case kstatus.NotFoundStatus:
		return v1alpha1.HealthMissing, res.Message
	}
	return v1alpha1.HealthUnknown, res.Message
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
