package health

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
)

// readHPA: an autoscaler that cannot scale or cannot read its metrics is Degraded;
// one whose target is scaled to zero is Suspended; one that has not assessed its
// target yet is Progressing. Any served version reads alike: the conditions are the
// same in autoscaling/v2 and v1 (where v1 keeps them in an annotation; it is then
// Healthy once it exists).
func readHPA(obj *unstructured.Unstructured) (Result, error) {
	if obj.GroupVersionKind().Version != "v2" {
		return healthy, nil
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := typed(obj, hpa); err != nil {
		return Result{}, err
	}
	if len(hpa.Status.Conditions) == 0 {
		return Result{Code: v1alpha1.HealthProgressing, Message: "waiting for the autoscaler to assess its target"}, nil
	}
	for _, c := range hpa.Status.Conditions {
		if c.Status != corev1.ConditionFalse {
			continue
		}
		switch {
		case c.Type == autoscalingv2.ScalingActive && c.Reason == "ScalingDisabled":
			return Result{Code: v1alpha1.HealthSuspended, Message: why(c.Reason, c.Message)}, nil
		case c.Type == autoscalingv2.AbleToScale || c.Type == autoscalingv2.ScalingActive:
			return Result{Code: v1alpha1.HealthDegraded, Message: why(c.Reason, c.Message)}, nil
		}
	}
	return healthy, nil
}
