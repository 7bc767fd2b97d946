package plan

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

// ActionEvent is the Event that records, on Sync s, that user asked for action
// ("reconcile", "suspend", "resume") through tool ("tether ui", "tether CLI"),
// at now. The CLI and the UI record the same Event; an empty user is said to be
// unknown (the API server would not say who).
func ActionEvent(s *v1alpha1.Sync, action, user, tool string, now time.Time) *corev1.Event {
	if user == "" {
		user = "an unknown user"
	}
	at := metav1.NewTime(now)
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: s.Name + ".", Namespace: s.Namespace},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "Sync",
			Namespace: s.Namespace, Name: s.Name, UID: s.UID,
		},
		Reason:         v1alpha1.ReasonRequestedByUser,
		Message:        fmt.Sprintf("%s asked to %s the Sync, through %s", user, action, tool),
		Type:           corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: tool},
		FirstTimestamp: at,
		LastTimestamp:  at,
		Count:          1,
	}
}
