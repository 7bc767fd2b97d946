package health

import (
	corev1 "k8s.io/api/core/v1"
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
