package health

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
)

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
