package gitcache

import "tether.dev/tether/source/result"

// What a fetch is asked and answers (package result), under the short names
// the cache's code and source's callers both use.
type (
	// Request names a repository and a ref to fetch.
	Request = result.Request
	// Revision is one commit of one repository, reached through one ref.
	Revision = result.Revision
	// FetchError is a failure to reach or read the repository.
	FetchError = result.FetchError
	// RenderError is a failure caused by repository content (over a bound
	// of TreeBounds, a link leaving the repository).
	RenderError = result.RenderError
)

// IsRenderError reports whether err was caused by repository content.
func IsRenderError(err error) bool { return result.IsRenderError(err) }
