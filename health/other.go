package health

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
)

// readPVC: a claim is Progressing until a volume is bound to it, and Degraded when
// it lost its volume.
func readPVC(obj *unstructured.Unstructured) (Result, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := typed(obj, pvc); err != nil {
		return Result{}, err
	}
	switch pvc.Status.Phase {
	case corev1.ClaimBound:
		return healthy, nil
	case corev1.ClaimLost:
		return Result{Code: v1alpha1.HealthDegraded, Message: "the bound volume is lost"}, nil
	}
	class := "the default storage class"
	if sc := pvc.Spec.StorageClassName; sc != nil {
		class = "storage class " + *sc
	}
	return result(v1alpha1.HealthProgressing, "waiting for a volume to bind (%s)", class), nil
}

// readService: a Service of type LoadBalancer is Progressing until the load
// balancer has an address; other Services are Healthy once they exist.
func readService(obj *unstructured.Unstructured) (Result, error) {
	svc := &corev1.Service{}
	if err := typed(obj, svc); err != nil {
		return Result{}, err
	}
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && len(svc.Status.LoadBalancer.Ingress) == 0 {
		return Result{Code: v1alpha1.HealthProgressing, Message: "waiting for the load balancer to get an address"}, nil
	}
	return healthy, nil
}

// readIngress: an Ingress is Progressing until its controller publishes an address
// (as Argo CD judges it).
func readIngress(obj *unstructured.Unstructured) (Result, error) {
	ing := &networkingv1.Ingress{}
	if err := typed(obj, ing); err != nil {
		return Result{}, err
	}
	if len(ing.Status.LoadBalancer.Ingress) == 0 {
		return Result{Code: v1alpha1.HealthProgressing, Message: "waiting for the ingress controller to publish an address"}, nil
	}
	return healthy, nil
}

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

// readAPIService: an aggregated API is Healthy while Available, Degraded when not
// (its backend is down: every request for its group fails).
func readAPIService(obj *unstructured.Unstructured) (Result, error) {
	conds, err := conditionsOf(obj)
	if err != nil {
		return Result{}, err
	}
	c, ok := conds["Available"]
	switch {
	case !ok:
		return Result{Code: v1alpha1.HealthProgressing, Message: "waiting for the API service to be assessed"}, nil
	case c.status == "True":
		return healthy, nil
	case c.status == "False":
		return Result{Code: v1alpha1.HealthDegraded, Message: why(c.reason, c.message)}, nil
	}
	return Result{Code: v1alpha1.HealthProgressing, Message: why(c.reason, c.message)}, nil
}

// readCRD: a CustomResourceDefinition is Healthy once Established, Degraded when
// its names conflict with another's.
func readCRD(obj *unstructured.Unstructured) (Result, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := typed(obj, crd); err != nil {
		return Result{}, err
	}
	var established bool
	for _, c := range crd.Status.Conditions {
		switch {
		case c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse:
			return Result{Code: v1alpha1.HealthDegraded, Message: why(c.Reason, c.Message)}, nil
		case c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue:
			established = true
		}
	}
	if !established {
		return Result{Code: v1alpha1.HealthProgressing, Message: "waiting for the definition to be established"}, nil
	}
	return healthy, nil
}
