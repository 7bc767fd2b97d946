package apply

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"tether.dev/tether/api/v1alpha1"
)

// ObjectError is a failure to apply one object; its message starts with the object
// ("Deployment/web/api: dry-run failed: ...").
type ObjectError struct {
	Object v1alpha1.ObjectRef
	// Op is the step that failed: "map", "read", "take over", "dry-run", "apply", "recreate", or
	// "wait" (a CRD written by the call did not become Established in time).
	Op  string
	Err error
}

func (e *ObjectError) Error() string {
	return fmt.Sprintf("%s: %s failed: %s", e.Object, e.Op, inUserTerms(e.Err.Error()))
}

func (e *ObjectError) Unwrap() error { return e.Err }

// ObjectErrors returns every *ObjectError in err, which may join several.
func ObjectErrors(err error) []*ObjectError {
	if oe, ok := err.(*ObjectError); ok { //nolint:errorlint // the node itself, not its chain
		return []*ObjectError{oe}
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var out []*ObjectError
		for _, e := range joined.Unwrap() {
			out = append(out, ObjectErrors(e)...)
		}
		return out
	}
	var oe *ObjectError
	if errors.As(err, &oe) {
		return []*ObjectError{oe}
	}
	return nil
}

// IsInvalid reports whether every object error in err comes from the object itself
// (rejected by validation or admission, a field of the wrong type, an immutable
// field, an unknown kind, a bad namespace) rather than from the cluster being unreachable: retrying the same
// objects cannot help until git changes.
func IsInvalid(err error) bool {
	errs := ObjectErrors(err)
	if len(errs) == 0 {
		return false
	}
	for _, oe := range errs {
		inner := oe.Err
		invalid := apierrors.IsInvalid(inner) || apierrors.IsBadRequest(inner) ||
			apierrors.IsForbidden(inner) || apierrors.IsMethodNotSupported(inner) ||
			meta.IsNoMatchError(inner) || errors.Is(inner, errNoNamespace) || errors.As(inner, new(*ClaimedError)) ||
			isTypeError(inner)
		if !invalid {
			return false
		}
	}
	return true
}

// typedPatchFailure is how the API server begins the message of its answer to a
// server-side apply whose patch does not fit the kind's schema (a list where a
// string belongs): a 500, although the fault is the object's, not the server's.
const typedPatchFailure = "failed to create typed patch object"

// isTypeError reports whether err is the API server refusing an object because a
// field has the wrong type, whatever status code it answered with.
func isTypeError(err error) bool {
	return apierrors.IsInternalError(err) && strings.Contains(err.Error(), typedPatchFailure)
}

// goValue is how structured-merge-diff prints the value of a field of the wrong
// type into the API server's answer: Go's own syntax for its internal type
// (`.data.key: expected string, got &value.valueUnstructured{Value:[]interface
// {}{1, 2}}`), which says nothing to whoever wrote the YAML.
const goValue = "&value.valueUnstructured{Value:"

// inUserTerms rewrites each Go value in msg as what the user wrote, in YAML's
// words ("got a list"), without the value itself (it may be a secret's).
func inUserTerms(msg string) string {
	for {
		i := strings.Index(msg, goValue)
		if i < 0 {
			return msg
		}
		inner, rest, ok := balanced(msg[i+len(goValue):])
		if !ok {
			return msg[:i] + "a value of another type"
		}
		msg = msg[:i] + yamlKind(inner) + rest
	}
}

// balanced splits s after the "}" that closes the "{" before it.
func balanced(s string) (inner, rest string, ok bool) {
	depth := 0
	for i, r := range s {
		switch r {
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return s[:i], s[i+1:], true
			}
			depth--
		}
	}
	return "", "", false
}

// yamlKind names the YAML kind of a value printed in Go syntax.
func yamlKind(v string) string {
	switch {
	case strings.HasPrefix(v, "[]"):
		return "a list"
	case strings.HasPrefix(v, "map["):
		return "a map"
	case strings.HasPrefix(v, `"`):
		return "a string"
	case v == "true" || v == "false":
		return "a boolean"
	case v == "<nil>" || v == "interface {}(nil)":
		return "null"
	case strings.Trim(v, "0123456789.-+e") == "":
		return "a number"
	}
	return "a value of another type"
}

// IsImmutable reports whether err rejects a change to an immutable field.
func IsImmutable(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
		return false
	}
	if details := status.Status().Details; details != nil {
		for _, c := range details.Causes {
			if strings.Contains(c.Message, "immutable") {
				return true
			}
		}
	}
	return strings.Contains(err.Error(), "field is immutable")
}

// ValidationError says that objects of a revision failed their server-side dry-run,
// so that nothing of the revision was written (past the Namespaces and CRDs of the
// first stage). Errs names every failing object and its cause.
type ValidationError struct {
	Errs []*ObjectError
}

func (e *ValidationError) Error() string {
	msgs := make([]string, len(e.Errs))
	for i, oe := range e.Errs {
		msgs[i] = oe.Error()
	}
	noun := "objects"
	if len(e.Errs) == 1 {
		noun = "object"
	}
	return fmt.Sprintf("%d %s failed validation, so nothing of the revision was written: %s", len(e.Errs), noun, strings.Join(msgs, "; "))
}

// Unwrap returns the error of every failing object.
func (e *ValidationError) Unwrap() []error {
	out := make([]error, len(e.Errs))
	for i, oe := range e.Errs {
		out[i] = oe
	}
	return out
}

// IsValidation reports whether err says a revision failed validation.
func IsValidation(err error) bool {
	var ve *ValidationError
	return errors.As(err, &ve)
}

// ClaimedError says an object is managed by another owner (another Sync): it is
// left to that owner rather than taken over.
type ClaimedError struct {
	// Owner is the tether.dev/owned-by value of the live object.
	Owner string
}

func (e *ClaimedError) Error() string {
	return fmt.Sprintf("already managed by Sync %s; remove it from one of the two, or delete the other Sync", e.Owner)
}

var errNoNamespace = errors.New("namespaced object names no namespace and the destination has none")
