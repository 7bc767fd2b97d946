package plan

import "tether.dev/tether/api/v1alpha1"

// FailureReasonOther is the reason label of a failure whose reason is not one
// of the known ones.
const FailureReasonOther = "Other"

// FailureReason is the reason label tether_sync_failure gives a False Ready
// condition's reason: the reason itself if v1alpha1.Reasons counts it as a
// failure, else Other, so that the label's values are bounded by that table
// whatever a condition says.
func FailureReason(reason string) string {
	if m, ok := v1alpha1.MeaningOf(reason); ok && m.Failure {
		return reason
	}
	return FailureReasonOther
}

// Stalls reports whether a failure for reason stalls the Sync rather than being
// retried (v1alpha1.Reasons).
func Stalls(reason string) bool {
	m, _ := v1alpha1.MeaningOf(reason)
	return m.Stalls
}
