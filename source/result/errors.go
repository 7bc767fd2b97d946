package result

import (
	"errors"
	"fmt"
)

// FetchError is a failure to reach or read the repository: a network error, bad
// credentials, a ref that does not exist. It is usually transient, and the caller
// retries with backoff while keeping the last good state applied.
type FetchError struct {
	// URL of the repository.
	URL string
	// Ref that was being resolved, as written in the Sync ("main", "v1.2.0").
	Ref string
	// Reason is a short CamelCase class of failure for conditions ("RefNotFound").
	Reason string
	Err    error
}

func (e *FetchError) Error() string {
	return fmt.Sprintf("%s (ref %s): %v", RedactURL(e.URL), e.Ref, e.Err)
}

func (e *FetchError) Unwrap() error { return e.Err }

// RenderError is a failure to turn a revision into objects: broken YAML, a manifest
// without a kind, a kustomize build error, a path that leaves the repository. It is
// caused by repository content, so retrying the same revision cannot help.
type RenderError struct {
	// File (or directory) at fault, relative to the repository root.
	File string
	// Reason classes the failure for conditions when it has a class of its own
	// (v1alpha1.ReasonRenderLimitExceeded); empty means RenderFailed.
	Reason string
	Err    error
}

func (e *RenderError) Error() string {
	if e.File == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%s: %v", e.File, e.Err)
}

func (e *RenderError) Unwrap() error { return e.Err }

// IsRenderError reports whether err was caused by repository content.
func IsRenderError(err error) bool {
	var re *RenderError
	return errors.As(err, &re)
}
