package health

import (
	"errors"
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"tether.dev/tether/api/v1alpha1"
)

// CostLimit bounds the work one evaluation of a health expression may do, in
// cel-go's cost units (about one per field visited or element iterated): a limit of
// the same order as Kubernetes' own for validation rules, generous for any
// expression that reads conditions, and what keeps an expression over a huge list
// from stalling a reconcile.
const CostLimit = 1_000_000

// Checker computes health with the CEL expressions of a Sync's spec.healthChecks
// for the kinds they name, and the built-in readers for every other kind. A nil
// Checker uses the built-in readers alone.
type Checker struct {
	checks map[schema.GroupKind]*celCheck
}

// celCheck is one compiled spec.healthChecks entry.
type celCheck struct {
	// in the order they are evaluated: inProgress, failed, current.
	exprs []celExpr
}

type celExpr struct {
	field   string // the spec field, for messages
	code    v1alpha1.HealthStatusCode
	program cel.Program
}

// InvalidCheckError says which expression of spec.healthChecks does not compile.
type InvalidCheckError struct {
	// Index is the entry's index in spec.healthChecks; Field names the expression
	// (current, inProgress, failed).
	Index int
	Field string
	Kind  string
	Err   error
}

func (e *InvalidCheckError) Error() string {
	return fmt.Sprintf("spec.healthChecks[%d].%s (%s): %v", e.Index, e.Field, e.Kind, e.Err)
}

func (e *InvalidCheckError) Unwrap() error { return e.Err }

// celEnv declares what expressions see: the object as self, and its top-level
// fields as variables of their own, as Flux's healthCheckExprs do.
var celEnv = func() *cel.Env {
	env, err := cel.NewEnv(
		cel.Variable("self", cel.DynType),
		cel.Variable("apiVersion", cel.StringType),
		cel.Variable("kind", cel.StringType),
		cel.Variable("metadata", cel.DynType),
		cel.Variable("spec", cel.DynType),
		cel.Variable("status", cel.DynType),
	)
	if err != nil {
		panic(fmt.Sprintf("health: the CEL environment is invalid: %v", err)) // a programming error, caught by every test
	}
	return env
}()

// NewChecker compiles checks. An expression that does not compile, or does not
// yield a bool, is an *InvalidCheckError naming it; errors of several are joined.
func NewChecker(checks []v1alpha1.HealthCheck) (*Checker, error) {
	if len(checks) == 0 {
		return nil, nil
	}
	c := &Checker{checks: map[schema.GroupKind]*celCheck{}}
	var errs []error
	for i, hc := range checks {
		gv, err := schema.ParseGroupVersion(hc.APIVersion)
		if err != nil {
			errs = append(errs, &InvalidCheckError{Index: i, Field: "apiVersion", Kind: hc.Kind, Err: err})
			continue
		}
		check := &celCheck{}
		for _, e := range []struct {
			field, source string
			code          v1alpha1.HealthStatusCode
		}{
			{"inProgress", hc.InProgress, v1alpha1.HealthProgressing},
			{"failed", hc.Failed, v1alpha1.HealthDegraded},
			{"current", hc.Current, v1alpha1.HealthHealthy},
		} {
			if e.source == "" {
				continue
			}
			prg, err := compile(e.source)
			if err != nil {
				errs = append(errs, &InvalidCheckError{Index: i, Field: e.field, Kind: hc.Kind, Err: err})
				continue
			}
			check.exprs = append(check.exprs, celExpr{field: e.field, code: e.code, program: prg})
		}
		c.checks[schema.GroupKind{Group: gv.Group, Kind: hc.Kind}] = check
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

func compile(source string) (cel.Program, error) {
	ast, iss := celEnv.Compile(source)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if !ast.OutputType().IsExactType(types.BoolType) && !ast.OutputType().IsExactType(types.DynType) {
		return nil, fmt.Errorf("the expression yields %s, not a bool", ast.OutputType())
	}
	return celEnv.Program(ast, cel.CostLimit(CostLimit))
}

// Checks reports whether a spec.healthChecks entry judges objects of gk (else the
// built-in readers do, from the object alone and, for a workload not Healthy, its
// pods).
func (c *Checker) Checks(gk schema.GroupKind) bool {
	if c == nil {
		return false
	}
	_, ok := c.checks[gk]
	return ok
}

// Compute is the package's Compute with c's expressions for the kinds they name.
func (c *Checker) Compute(obj *unstructured.Unstructured, pods ...*unstructured.Unstructured) Result {
	if c == nil || obj == nil || obj.GetDeletionTimestamp() != nil {
		return Compute(obj, pods...)
	}
	check, ok := c.checks[obj.GroupVersionKind().GroupKind()]
	if !ok {
		return Compute(obj, pods...)
	}
	return check.eval(obj)
}

func (c *celCheck) eval(obj *unstructured.Unstructured) Result {
	vars := map[string]any{
		"self":       obj.Object,
		"apiVersion": obj.GetAPIVersion(),
		"kind":       obj.GetKind(),
		"metadata":   fieldOr(obj, "metadata"),
		"spec":       fieldOr(obj, "spec"),
		"status":     fieldOr(obj, "status"),
	}
	for _, e := range c.exprs {
		out, _, err := e.program.Eval(vars)
		if err != nil {
			return result(v1alpha1.HealthUnknown, "health check %s: %v", e.field, err)
		}
		matched, ok := out.Value().(bool)
		if !ok {
			return result(v1alpha1.HealthUnknown, "health check %s yields %v, not a bool", e.field, out.Value())
		}
		if matched {
			if e.code == v1alpha1.HealthHealthy {
				return healthy
			}
			return result(e.code, "health check %s is true", e.field)
		}
	}
	return Result{Code: v1alpha1.HealthProgressing, Message: "no health check is true yet"}
}

// fieldOr returns a top-level map field of obj, or an empty map, so that an
// expression over a status not written yet reads has() as false instead of failing.
func fieldOr(obj *unstructured.Unstructured, name string) map[string]any {
	if m, ok := obj.Object[name].(map[string]any); ok {
		return m
	}
	return map[string]any{}
}
