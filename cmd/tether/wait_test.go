package main

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

// A Sync with spec.wait holds Ready back while its objects roll out: `tether wait`
// still sees the revision applied, and judges health apart.
func TestWaitJudgesASyncThatWaitsForHealth(t *testing.T) {
	const rev = "main@sha1:4f2c1a2b"
	sync := func(wait bool, health v1alpha1.HealthStatusCode, ready metav1.ConditionStatus, reason string) *v1alpha1.Sync {
		s := &v1alpha1.Sync{}
		s.Generation = 2
		s.Spec.Wait = wait
		s.Status.LastAppliedRevision, s.Status.SourceRevision, s.Status.Health = rev, rev, health
		s.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: ready, Reason: reason, ObservedGeneration: 2}}
		return s
	}
	for _, tc := range []struct {
		name    string
		flags   waitFlags
		s       *v1alpha1.Sync
		verdict verdict
	}{
		{"applied, rolling out, waiting for the revision", waitFlags{revision: "4f2c1a2"}, sync(true, v1alpha1.HealthProgressing, metav1.ConditionUnknown, v1alpha1.ReasonProgressing), succeeded},
		{"applied, rolling out, waiting for health", waitFlags{healthy: true}, sync(true, v1alpha1.HealthProgressing, metav1.ConditionUnknown, v1alpha1.ReasonProgressing), pending},
		{"applied, degraded, waiting for health", waitFlags{healthy: true}, sync(true, v1alpha1.HealthDegraded, metav1.ConditionFalse, v1alpha1.ReasonDegraded), failed},
		{"healthy", waitFlags{healthy: true}, sync(true, v1alpha1.HealthHealthy, metav1.ConditionTrue, v1alpha1.ReasonSucceeded), succeeded},
		{"without spec.wait, a Degraded reason on Ready is a failure to apply", waitFlags{}, sync(false, v1alpha1.HealthUnknown, metav1.ConditionFalse, v1alpha1.ReasonDegraded), pending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.flags.judge(tc.s); got.verdict != tc.verdict {
				t.Errorf("judge = %+v, want verdict %v", got, tc.verdict)
			}
		})
	}
}
