// Package source turns a git repository into desired state: it resolves a ref to a
// commit, fetches that commit into an on-disk cache, and renders a path of the
// commit's tree (plain YAML/JSON manifests or a kustomization) into objects.
//
// Data flows in two steps, so the caller can report each on its own:
//
//	Fetch(ctx, Request)          → Revision{URL, Ref, Commit}   (network; *FetchError)
//	Render(ctx, Revision, path)  → *Snapshot{Revision, Objects} (no network; *RenderError)
//
// Repository content is treated as hostile. Rendering never touches the host file
// system: the commit's tree is copied, within size limits, into an in-memory file
// system, so a path or symlink cannot reach anything outside the repository, and
// kustomize runs in process with plugins off and remote bases refused.
//
// The package owns git access and rendering only. It does not talk to Kubernetes,
// apply anything, log, or know about Sync objects beyond the ref type of the API.
package source
