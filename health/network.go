package health

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
)

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
