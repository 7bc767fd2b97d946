package health

import (
	"errors"
	"strings"
	"testing"

	"tether.dev/tether/api/v1alpha1"
)

// The three examples of docs/health.md, judged against objects as their
// controllers write them.
var (
	certificateCheck = v1alpha1.HealthCheck{
		APIVersion: "cert-manager.io/v1", Kind: "Certificate",
		Current:    "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
		InProgress: "!has(status.conditions) || status.conditions.exists(c, c.type == 'Issuing' && c.status == 'True')",
		Failed:     "status.conditions.exists(c, c.type == 'Ready' && c.status == 'False' && c.reason != 'DoesNotExist')",
	}
	claimCheck = v1alpha1.HealthCheck{
		APIVersion: "database.example.org/v1alpha1", Kind: "PostgreSQLInstance",
		Current:    "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True') && status.conditions.exists(c, c.type == 'Synced' && c.status == 'True')",
		InProgress: "!has(status.conditions) || status.conditions.exists(c, c.type == 'Ready' && c.status == 'False' && c.reason == 'Creating')",
		Failed:     "status.conditions.exists(c, c.type == 'Synced' && c.status == 'False')",
	}
	rolloutCheck = v1alpha1.HealthCheck{
		APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout",
		Current:    "has(status.phase) && status.phase == 'Healthy' && status.observedGeneration == string(metadata.generation)",
		InProgress: "!has(status.phase) || status.phase == 'Progressing' || status.observedGeneration != string(metadata.generation)",
		Failed:     "status.phase == 'Degraded'",
	}
)

func TestCheckerJudgesKindsByTheirExpressions(t *testing.T) {
	checker, err := NewChecker([]v1alpha1.HealthCheck{certificateCheck, claimCheck, rolloutCheck})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		manifest string
		want     v1alpha1.HealthStatusCode
	}{
		{"a Certificate being issued", `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: "n", generation: 1}
status:
  conditions:
  - {type: Ready, status: "False", reason: DoesNotExist}
  - {type: Issuing, status: "True", reason: DoesNotExist}
`, v1alpha1.HealthProgressing},
		{"an issued Certificate", `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: "n", generation: 1}
status:
  conditions: [{type: Ready, status: "True", reason: Ready}]
`, v1alpha1.HealthHealthy},
		{"a Certificate whose issuer is missing", `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: "n", generation: 1}
status:
  conditions: [{type: Ready, status: "False", reason: IssuerNotFound}]
`, v1alpha1.HealthDegraded},
		{"a Certificate with no status yet", `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web, namespace: "n", generation: 1}
`, v1alpha1.HealthProgressing},
		{"a Crossplane claim being created", `
apiVersion: database.example.org/v1alpha1
kind: PostgreSQLInstance
metadata: {name: db, namespace: "n", generation: 1}
status:
  conditions:
  - {type: Synced, status: "True", reason: ReconcileSuccess}
  - {type: Ready, status: "False", reason: Creating}
`, v1alpha1.HealthProgressing},
		{"a Crossplane claim that cannot sync", `
apiVersion: database.example.org/v1alpha1
kind: PostgreSQLInstance
metadata: {name: db, namespace: "n", generation: 1}
status:
  conditions:
  - {type: Synced, status: "False", reason: ReconcileError, message: "cannot compose resources"}
`, v1alpha1.HealthDegraded},
		{"a ready Crossplane claim", `
apiVersion: database.example.org/v1alpha1
kind: PostgreSQLInstance
metadata: {name: db, namespace: "n", generation: 1}
status:
  conditions:
  - {type: Synced, status: "True", reason: ReconcileSuccess}
  - {type: Ready, status: "True", reason: Available}
`, v1alpha1.HealthHealthy},
		{"an Argo Rollout mid-canary", `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web, namespace: "n", generation: 4}
status: {phase: Progressing, observedGeneration: "4"}
`, v1alpha1.HealthProgressing},
		{"an Argo Rollout not yet observed", `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web, namespace: "n", generation: 5}
status: {phase: Healthy, observedGeneration: "4"}
`, v1alpha1.HealthProgressing},
		{"an aborted Argo Rollout", `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web, namespace: "n", generation: 4}
status: {phase: Degraded, observedGeneration: "4", message: "RolloutAborted"}
`, v1alpha1.HealthDegraded},
		{"a healthy Argo Rollout", `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: web, namespace: "n", generation: 4}
status: {phase: Healthy, observedGeneration: "4"}
`, v1alpha1.HealthHealthy},
		{"a kind without a check keeps the built-in readers", `
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: "n"}
spec: {schedule: "0 3 * * *", suspend: true, jobTemplate: {spec: {template: {spec: {containers: []}}}}}
`, v1alpha1.HealthSuspended},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := checker.Compute(object(t, tc.manifest)); got.Code != tc.want {
				t.Errorf("Compute() = %s (%q), want %s", got.Code, got.Message, tc.want)
			}
		})
	}
}

func TestCheckerRefusesExpressionsThatDoNotCompile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check v1alpha1.HealthCheck
		field string
	}{
		{"a syntax error", v1alpha1.HealthCheck{APIVersion: "example.com/v1", Kind: "Widget", Current: "status.ready =="}, "current"},
		{"an undeclared variable", v1alpha1.HealthCheck{APIVersion: "example.com/v1", Kind: "Widget", Current: "true", Failed: "object.status.ready"}, "failed"},
		{"not a bool", v1alpha1.HealthCheck{APIVersion: "example.com/v1", Kind: "Widget", Current: "'ready'"}, "current"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewChecker([]v1alpha1.HealthCheck{tc.check})
			var invalid *InvalidCheckError
			if !errors.As(err, &invalid) || invalid.Field != tc.field || invalid.Index != 0 {
				t.Fatalf("NewChecker() = %v, want an InvalidCheckError of spec.healthChecks[0].%s", err, tc.field)
			}
			if !strings.Contains(err.Error(), "spec.healthChecks[0]."+tc.field+" (Widget)") {
				t.Errorf("error %q does not name the expression", err)
			}
		})
	}
}

func TestCheckerBoundsTheCostOfAnExpression(t *testing.T) {
	checker, err := NewChecker([]v1alpha1.HealthCheck{{
		APIVersion: "example.com/v1", Kind: "Widget",
		// Quadratic in the number of items: 2,000 items cost millions of units.
		Current: "status.items.all(a, status.items.all(b, a <= b || a > b))",
	}})
	if err != nil {
		t.Fatal(err)
	}
	var items strings.Builder
	for i := range 2000 {
		if i > 0 {
			items.WriteString(", ")
		}
		items.WriteString("1")
	}
	got := checker.Compute(object(t, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: \"n\"}\nstatus: {items: ["+items.String()+"]}\n"))
	if got.Code != v1alpha1.HealthUnknown || !strings.Contains(got.Message, "cost limit") {
		t.Errorf("Compute() = %s (%q), want Unknown for exceeding the cost limit", got.Code, got.Message)
	}
}
