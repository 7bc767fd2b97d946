package plan_test

import (
	"testing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

func TestFailureReasonsAreBounded(t *testing.T) {
	for reason, want := range map[string]string{
		v1alpha1.ReasonValidationFailed: v1alpha1.ReasonValidationFailed,
		v1alpha1.ReasonHostUnreachable:  v1alpha1.ReasonHostUnreachable,
		// Stalls a Sync (Ready False): reported by name, not as Other.
		v1alpha1.ReasonHealthCheckInvalid: v1alpha1.ReasonHealthCheckInvalid,
		v1alpha1.ReasonSucceeded:          plan.FailureReasonOther,
		"a message, not a reason":         plan.FailureReasonOther,
	} {
		if got := plan.FailureReason(reason); got != want {
			t.Errorf("FailureReason(%q) = %q, want %q", reason, got, want)
		}
	}
}
