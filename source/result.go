package source

import "tether.dev/tether/source/result"

// What a source answers (package result, which plan reads without importing
// source), under the names its callers know.
type (
	// Request names the desired state to fetch: a repository and a ref.
	Request = result.Request
	// Verification is spec.source.verify with its keys read.
	Verification = result.Verification
	// Revision is one commit of one repository, reached through one ref.
	Revision = result.Revision
	// Snapshot is the desired state at one revision.
	Snapshot = result.Snapshot
	// FetchError is a failure to reach or read the repository.
	FetchError = result.FetchError
	// RenderError is a failure to turn a revision into objects, caused by
	// repository content.
	RenderError = result.RenderError
)

// IsRenderError reports whether err was caused by repository content.
func IsRenderError(err error) bool { return result.IsRenderError(err) }

// RedactURL removes credentials written into a URL, so that the URL can go into
// messages, logs and metric labels (result.RedactURL).
func RedactURL(raw string) string { return result.RedactURL(raw) }
