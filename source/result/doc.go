// Package result is what a source is asked and what it answers, with nothing of
// git, charts or rendering in it. It is asked for a Request (a repository and a
// ref) or a ChartRequest (a packaged chart), each with the Auth its caller read
// (every field secret: String prints none); plan maps a Sync to them
// (plan.RequestOf, plan.ChartRequestOf). It answers a Snapshot (the objects
// a path renders to) at a Revision, or a typed error that says why there is none: a *FetchError (the
// repository could not be reached or read; usually transient) or a
// *RenderError (its content could not be rendered; retrying the same
// revision cannot help). RedactURL is the one rule by which a repository's
// URL loses its credentials before it goes into a message.
//
// It sits below source and its rooms, which make these values, and below
// plan, which reads them (an empty or too large render, a failure caused by
// the repository's content) without importing source and what source
// imports. source re-exports every name as an alias.
package result
