// Package gitcache is source's git cache: the on-disk cache of repositories,
// fetching commits into it, and reading what renders, SyncSets and history
// need out of the commits it holds. It is a room below source's façade that
// knows api, source/result, source/git (how to speak to a host) and, for the
// in-memory file system a render reads, source/render; it runs no render and
// knows nothing of charts, Syncs or webhooks.
//
// Cache holds one bare repository per repository below Options.CacheDir,
// whatever the spelling of its URL (cacheKey), each with its entry in memory
// (entry.go): what its remote last answered, by credentials, and who asked for
// it when. Data flows in through Fetch (fetch.go): resolve the ref from one
// ref listing shared within MaxAge by callers with the same credentials
// (listing.go), pass the host gate (source/git), and fetch, one ref only, only
// a commit the cache lacks. While a pack is received it counts against
// MaxCacheBytes, shared fairly between the tenants that use the cache
// (share.go: who may take what, and whose repositories make room); idle
// repositories are swept (cache.go). Refresh ends the sharing of a listing
// early when a push says the remote moved.
//
// Data flows out of commits the cache holds, with no request to a host:
// Tree copies the files rendering a path reads into a render.FS (tree.go: the
// path and every kustomization root it reaches, read lazily within
// TreeBounds, trees parsed once per repository in tree_cache.go and read by
// tree_read.go), HoldsFile tells whether a path is there (whether a path
// holds a chart), Glob and ReadFiles list and read for SyncSets (glob.go),
// Descends walks history (history.go) and Subject reads a commit's subject
// (subject.go). Copier reads a tree the cache does not hold, a local clone's
// commit or a directory on disk (disk_store.go), by the same copier within
// the same bounds, for the CLI.
//
// Errors are source/result's: a *FetchError with a Reason for what reaching
// or reading the repository failed on, a *RenderError for what the
// repository's content is over a bound in. The package does not log.
package gitcache
