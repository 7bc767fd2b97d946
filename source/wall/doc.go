// Package wall is the render wall: every render runs in a worker process,
// the agent's own executable started again (ServeRenderWorker), which puts
// itself under the operating system's limits on memory, processor time and
// open files before it reads its job (limits.go, proc_*.go), and which the
// agent kills past the render's deadline or its memory (worker.go). Whatever
// a repository holds can then end a worker, never the agent.
//
// Data flows through one frame each way (wire.go):
//
//	Job{Files, Dirs | Package, Helm, Caps, Keys, Opts} → worker → source/render → answer{objects as JSON | error}
//
// The caller (source) copies the files a render reads out of a commit, within
// their bounds, and hands them over with the Helm input, what the cluster
// answered and the decryption keys; this package knows no git cache. The
// worker renders with source/render (child.go) and answers the objects as
// JSON, within MaxRenderedBytes, or a RenderError whose sentinels errors.Is
// still finds. A worker may serve the next render of the same limits (a small
// pool) unless it failed, held a tenant's secrets or kept half its memory.
//
// Two steps that run on a render's objects run here too: Overlay
// (overlay.go) puts a Sync's spec.kustomize on them, Substitute
// (substitute.go) substitutes spec.postBuild's variables (source/substitute).
// What workers answer is kept in Cache (cache.go), in the form they answer
// it (compact.go), its budget shared fairly between tenants; source decides
// what to keep under which key.
package wall
