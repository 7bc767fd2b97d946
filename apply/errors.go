package apply

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
)

// ObjectError is a failure to apply one object; its message starts with the object
// ("Deployment/web/api: dry-run failed: ...").
type ObjectError struct {
	Object ObjectRef
	// Op is the step that failed: "map", "read", "dry-run", "apply", or "wait" (a
	// CRD written by the call did not become Established in time).
	Op  string
	Err error
}

func (e *ObjectError) Error() string {
	return fmt.Sprintf("%s: %s failed: %v", e.Object, e.Op, e.Err)
}

func (e *ObjectError) Unwrap() error { return e.Err }

// IsInvalid reports whether err comes from the object itself (rejected by
// validation or admission, an unknown kind, a bad namespace) rather than from the
// cluster being unreachable: retrying the same object cannot help.
func IsInvalid(err error) bool {
	var oe *ObjectError
	if !errors.As(err, &oe) {
		return false
	}
	inner := oe.Err
	return apierrors.IsInvalid(inner) || apierrors.IsBadRequest(inner) ||
		apierrors.IsForbidden(inner) || apierrors.IsMethodNotSupported(inner) ||
		meta.IsNoMatchError(inner) || errors.Is(inner, errNoNamespace)
}

var errNoNamespace = errors.New("namespaced object names no namespace and the destination has none")
