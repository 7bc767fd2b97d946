package substitute

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
)

// DefaultMaxBytes is the default of Options.MaxBytes: as much as one render
// may produce (source's MaxRenderedBytes).
const DefaultMaxBytes = 16 << 20

// Options says how objects are substituted.
type Options struct {
	// Variables are the names and values to substitute. Each name must match
	// NamePattern.
	Variables map[string]string
	// Strict fails on a reference to a variable that is not set and gives no
	// default (Flux's StrictPostBuildSubstitutions); without it such a
	// reference becomes the empty string.
	Strict bool
	// MaxBytes bounds the bytes (as YAML) of the objects one call substitutes,
	// charged before each is built (see the package's doc). 0 means
	// DefaultMaxBytes.
	MaxBytes int64
}

// DefaultOptions substitutes nothing, not strictly, within DefaultMaxBytes.
func DefaultOptions() Options {
	return Options{MaxBytes: DefaultMaxBytes}
}

// NamePattern is what a variable's name must match, as Flux validates it.
const NamePattern = `^[_[:alpha:]][_[:alpha:][:digit:]]*$`

var namePattern = regexp.MustCompile(NamePattern)

// Errors an *Error wraps, for errors.Is.
var (
	// ErrNotSet: strict mode met a variable that is not set and gives no
	// default.
	ErrNotSet = errors.New("variable is not set (strict mode) and the reference gives no default")
	// ErrInvalidName: a variable's name does not match NamePattern.
	ErrInvalidName = errors.New("invalid variable name, must match " + NamePattern)
	// ErrBudget: the substituted objects would pass Options.MaxBytes.
	ErrBudget = errors.New("the substituted objects would pass the substitution budget")
	// ErrSyntax: an expression does not parse, or the substituted object is
	// no longer valid YAML.
	ErrSyntax = errors.New("cannot substitute")
)

// Error is a failure to substitute: it names the object (Kind/namespace/name,
// empty for a bad variable name) and the variable at fault, never a value.
type Error struct {
	Object   string
	Variable string
	Err      error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Object != "" {
		b.WriteString(e.Object)
		b.WriteString(": ")
	}
	if e.Variable != "" {
		fmt.Fprintf(&b, "variable %q: ", e.Variable)
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Objects substitutes opts.Variables into objs and returns the result, one
// object for each of objs in the same order: objs[i] itself when it is opted
// out or holds no "${", a new object otherwise. objs are never changed.
func Objects(objs []*unstructured.Unstructured, opts Options) ([]*unstructured.Unstructured, error) {
	if err := checkNames(opts.Variables); err != nil {
		return nil, err
	}
	b := budget{left: opts.MaxBytes}
	if b.left <= 0 {
		b.left = DefaultMaxBytes
	}
	out := make([]*unstructured.Unstructured, len(objs))
	for i, obj := range objs {
		o, err := object(obj, opts, &b)
		if err != nil {
			return nil, err
		}
		out[i] = o
	}
	return out, nil
}

// checkNames refuses a variable whose name Flux would refuse.
func checkNames(vars map[string]string) error {
	for name := range vars {
		if !namePattern.MatchString(name) {
			return &Error{Variable: name, Err: ErrInvalidName}
		}
	}
	return nil
}

// IsDisabled reports whether obj opts out of substitution: it is labelled or
// annotated v1alpha1.SubstituteAnnotation: disabled, Flux's opt-out.
func IsDisabled(obj *unstructured.Unstructured) bool {
	key, off := v1alpha1.SubstituteAnnotation, v1alpha1.SubstituteDisabled
	return obj.GetAnnotations()[key] == off || obj.GetLabels()[key] == off
}

// object substitutes one object, charging b.
func object(obj *unstructured.Unstructured, opts Options, b *budget) (*unstructured.Unstructured, error) {
	if IsDisabled(obj) || !holdsExpression(obj.Object) {
		return obj, nil
	}
	text, err := yaml.Marshal(obj.Object)
	if err != nil {
		return nil, &Error{Object: name(obj), Err: fmt.Errorf("%w: writing the object as YAML: %w", ErrSyntax, err)}
	}
	bound, err := outputBound(string(text), opts.Variables)
	if err != nil {
		return nil, &Error{Object: name(obj), Err: fmt.Errorf("%w: %w", ErrSyntax, err)}
	}
	if err := b.charge(bound); err != nil {
		return nil, &Error{Object: name(obj), Err: err}
	}
	var missing string
	output, err := envsubst.Eval(string(text), func(v string) (string, bool) {
		value, ok := opts.Variables[v]
		if !ok && opts.Strict {
			missing = v
			return "", false
		}
		return value, true
	})
	switch {
	case err != nil && missing != "":
		return nil, &Error{Object: name(obj), Variable: missing, Err: ErrNotSet}
	case err != nil:
		return nil, &Error{Object: name(obj), Err: fmt.Errorf("%w: %w", ErrSyntax, err)}
	}
	return decode(obj, output)
}

// decode reads the substituted YAML of obj back into an object. Its error
// never quotes the YAML: it may hold a Secret's value.
func decode(obj *unstructured.Unstructured, output string) (*unstructured.Unstructured, error) {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(output), &m); err != nil || m == nil {
		return nil, &Error{Object: name(obj), Err: fmt.Errorf("%w: the substituted object is not valid YAML", ErrSyntax)}
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// name names obj in errors: Kind/namespace/name, or Kind/name.
func name(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return obj.GetKind() + "/" + ns + "/" + obj.GetName()
	}
	return obj.GetKind() + "/" + obj.GetName()
}

// holdsExpression reports whether a key or a string of v holds "${": only
// then can its YAML hold one. It is much cheaper than writing the YAML.
func holdsExpression(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, "${")
	case map[string]any:
		for k, e := range v {
			if strings.Contains(k, "${") || holdsExpression(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if holdsExpression(e) {
				return true
			}
		}
	}
	return false
}
