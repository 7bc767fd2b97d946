// Package source turns a git repository into desired state: it resolves a ref to a
// commit, fetches that commit into an on-disk cache, and renders a path of the
// commit's tree (plain YAML/JSON manifests, a kustomization or a Helm chart) into
// objects. It also receives push notifications from git hosts (webhooks).
//
// Data flows in two steps, so the caller can report each on its own:
//
//	Fetch(ctx, Request)          → Revision{URL, Ref, Commit}   (network; *FetchError)
//	Render(ctx, Revision, path)  → *Snapshot{Revision, Objects} (no network; *RenderError)
//
// Fetch is cheap when nothing changed: it lists the remote's refs (one request) and
// fetches, one ref only, only a commit the cache lacks; a repository's first fetch
// takes only that commit (depth 1), later ones the commits since, so that Descends
// can still tell a forward move from a rewrite. A Request's MaxAge lets
// callers that share a URL and credentials share one listing, whatever ref each
// follows (never callers with other credentials: the remote must refuse a caller
// without access itself); a push notification calls Refresh to end that sharing
// early. One slow host cannot take every caller: at most MaxFetchesPerHost
// conversations with a host run at once (more callers wait in the host's line
// for a few seconds, least recently served first, then get ReasonHostBusy;
// callers of a repository the host is already answering wait briefly for
// that answer and share it; the places are shared fairly between tenants,
// Request.Tenant, so that one namespace's fetches cannot make another's wait), no lock that other URLs or rendering need is held while
// waiting for a ref listing, and a host that could not be reached is not asked again
// for HostFailureMemory. The on-disk cache holds one bare
// repository per repository, whatever the spelling of its URL; repositories unused
// for CacheIdle are removed, and MaxCacheBytes holds while a pack is received: the
// Fetch that would pass it stops with ReasonCacheFull and leaves nothing of its
// pack. The cap is shared fairly between tenants (source/gitcache, share.go): while N
// tenants use the cache, each may hold MaxCacheBytes/N (a repository several
// use counts to each in equal parts; one repository of any size within the cap
// is always allowed), a fetch that would take its tenant past its share stops
// with ReasonCacheFull naming the share unless the tenant's own repositories
// that it has not asked for in CacheKeepRecent make the room (least recently
// asked first; never one another tenant uses), and a tenant within its share that
// finds the cache full gets room from its own it no longer asks for, then from
// repositories no tenant uses, then from
// those of tenants over their share (least recently used first, never one in
// use nor a tenant's only one); nothing else is ever evicted. file:// URLs are refused
// unless AllowFileURLs. Refs are a branch, a tag,
// a semver range (the newest tag that satisfies it) or a pinned commit. Credentials
// (Auth) come from the caller, who reads them from Kubernetes; this package never
// does. SSH host keys are always verified against the caller's known_hosts. Git's
// HTTP(S) conversations use clients of their own (source/git), never
// http.DefaultTransport: explicit timeouts, the proxy from the environment, TLS
// against the system's roots plus the caller's CA bundle. An answer outside 2xx is
// read up to 4 KiB and dropped, and a ref listing up to 8 MiB. Every FetchError
// carries a Reason (HostUnreachable, AuthenticationFailed, HostKeyMismatch,
// RefNotFound, NoMatchingTag, …) for conditions; no error quotes a credential, nor
// what a remote's HTTP error answer said ("HTTP 403 Forbidden" instead).
//
// A path renders as Flux renders one: a kustomization is built by kustomize (the
// library of the pinned kustomize CLI, which the conformance test in testdata/
// conformance compares with); a directory without one yields its manifest files
// recursively and builds each subdirectory holding a kustomization as one, leaves
// out hidden files and documents that are no Kubernetes object, and reads YAML
// as kubectl reads it (sigs.k8s.io/yaml, after yaml.v3 has measured the document
// within the budgets below). RenderDirectory renders a directory on disk by the
// same path (a treeStore over the disk instead of the commit), for the CLI.
//
// Repository content is treated as hostile. Rendering never touches the host file
// system or the network: the files of the commit that the path needs (those below
// it and below every kustomization root its kustomizations reach, within
// MaxTreeSize) are copied into an in-memory file system of the package's own
// (kyaml's refuses names git takes), so a path or symlink
// cannot reach anything outside the repository, and kustomize runs in process with
// plugins, exec and container functions and Helm off, the load restrictor on.
// Kustomize's loader would download any http(s) path and clone (by running git)
// anything its git URL parser accepts as a base, and cannot be replaced; the
// network is closed to it by construction: main calls IsolateRendering, which
// makes the process's default HTTP transport refuse every request
// (ErrNetworkRefused) and git's allowed transports none, and everything else that
// talks HTTP (git, Kubernetes) has a transport of its own. For good messages,
// every kustomization and builtin plugin configuration kustomize could read is
// also checked before it runs, read as kustomize reads it (its types and decoder,
// its resource factory, its git URL parser), so that a URL in any field, however
// spelt, fails the render naming the file and the field (ErrRemoteReference); a
// URL kustomize computes while it builds (a replacement into a plugin
// configuration) is beyond any check, and is refused by the transport. The
// commit's trees are read lazily, directory by directory from its root, and every
// entry read counts against MaxTreeEntries each time a tree is walked, so one tree
// named a thousand times cannot make a small commit name a million files. Every
// YAML file a render reads (kustomize's included) is bounded in nodes from its text
// before any parser runs (MaxYAMLNodesPerFile, and MaxYAMLNodesPerRender for all
// of them), because a parser spends a few hundred bytes on each node. YAML is
// decoded within a byte budget that counts what aliases expand to, and within the
// node budget, so a large scalar under many aliases is refused before anything
// large is built; deep nesting fails within a fixed bound, the rendered output is
// bounded in bytes and objects (a render over any of these bounds fails with
// v1alpha1.ReasonRenderLimitExceeded), an object with only generateName is
// refused unless it is a hook (v1alpha1.IsHookAnnotated), and a panic while rendering becomes an error. At most
// MaxConcurrentRenders renders run at once,
// each within RenderTimeout: a caller whose render passes it gets
// ErrRenderTimeout and gives back its slot at once (as it does when its context
// ends), and the worker is killed at the deadline; a render whose caller left
// before runs on outside the slot count until it finishes and fills the cache,
// at most one per (URL, commit, path) and MaxConcurrentRenders +
// MaxRendersGivenUp running in all. Results are cached in an LRU bounded in bytes.
//
// A render may decrypt SOPS files (RenderDecrypted, with a *Decryption: one Sync's
// age and OpenPGP keys, parsed by ParseKeys from its keys Secret, and whether a Secret
// must be encrypted). Every file the render reads then passes through a decrypting file system (source/render),
// which decrypts a file that carries SOPS's metadata (YAML, JSON, dotenv or binary, the
// name picking the format) with Tether's own reading of SOPS's format (the room
// source/sops, a leaf that knows only the error types: the formats' trees, the metadata, AES-GCM values, the MAC, the data key from age and
// OpenPGP keys, Shamir's combination of key groups; tested against the sops CLI) and
// only those keys (never the process's environment, files or keyrings), checks
// its MAC, and serves the plaintext from the render's memory; a failure is a
// RenderError naming the file with its reason (DecryptionFailed, DecryptionTampered,
// UnencryptedSecret), and any other error of a render that decrypted has the decrypted
// values taken out of its message. Renders are cached by (URL, commit, path, digest of
// the keys): the plaintext lives in the in-memory cache only, never in CacheDir.
// The render cache's budget is shared fairly between tenants (WithTenant names
// who asks; source/wall, cache.go): over it, the least recently used render of the
// tenant holding the most goes first.
// A path holding a Chart.yaml renders as a Helm chart (source/render, helm*.go), in
// process with the Helm SDK's loader, values and template engine, as `helm
// template` would: the caller's Helm says the release, the values layered over
// the chart's (valuesFiles of the commit, valuesFrom the caller read, inline
// values) and reads the cluster's Capabilities once per render; lookup returns
// nothing. The render cache's key then holds a digest of the values (whether a
// path holds a chart is probed once per commit and path, so plain paths still
// share one render between Syncs). Dependencies must be vendored (nothing is
// downloaded; a missing one is named), the chart's CRDs come first unless
// skipped, and Helm hooks are kept with their annotations (plan runs them as the
// hooks of a revision's run). Templates
// run as Helm parses them, never rewritten; every function they call is
// decorated to charge what it makes to a budget, and the functions that make far
// more than they are given (repeat, indent, toJson of a map holding one map
// many times) check first. Vendored chart archives are unpacked by this package
// within the chart's bounds, a chart's kubeVersion is checked and its values
// schema validated, as helm does. Over a bound the render fails with
// ReasonRenderLimitExceeded.
//
// Every render runs behind a wall (the room source/wall): in a worker process,
// the agent's own executable started again (ServeRenderWorker), which puts
// itself under the operating system's limits on memory, processor time and
// open files before it reads its job, and which the agent kills past the
// render's deadline or its memory (RenderMemoryLimit). The agent copies the
// files a render reads out of the commit (within the bounds above) and sends
// them with the Helm input and the decryption keys; the worker renders, and
// answers the objects as JSON, within MaxRenderedBytes. Whatever a repository
// holds can then end a worker, never the agent. A worker may serve the next
// render unless it failed, held a tenant's secrets or kept half its memory.
// Two steps after a render run there too, on its objects: Overlay puts a
// Sync's spec.kustomize on them (a kustomization whose resources are the
// objects, built by kustomize as a repository's is, within the same budgets;
// its components copied from the commit as a path's files are), then
// Substitute substitutes spec.postBuild's variables.
//
// A packaged chart comes from a chart repository (the room source/chartrepo) in the same two
// steps: FetchChart(ctx, ChartRequest) resolves an exact version or a semver
// range against the repository's index.yaml and downloads the newest match's
// package (Revision{URL: repository, Ref: "name@version", Package: its
// SHA-256}); RenderChart(ctx, Revision, Helm) unpacks it in memory and renders
// it through the same chart path as a chart in git, the Snapshot's revision
// then carrying Digest (of the package and the values: status reports
// "name@version+sha256:<digest>"). An index is read once per (repository,
// credentials) and MaxAge however many callers ask, and cut into one part per
// chart before it is parsed, so that a large index is never one YAML tree; a
// package is downloaded once per version and digest, checked against the
// index's SHA-256, and kept in memory (ChartCacheBytes). Index, package, file
// count and unpacked bytes are bounded (MaxChartIndexBytes,
// MaxChartPackageBytes, MaxChartFiles, MaxFileSize, MaxTreeSize), links and
// names leaving the chart are refused, and the conversations follow git's HTTP
// rules (source/chartrepo, http.go): credentials go to the repository's own host only, an
// error answer is reported by its status alone.
//
// An OCI registry (oci://host/path, oci.go) is read the same way through
// four requests of the distribution API, written here rather than with oras-go
// so that they share those rules and bounds: the tag list of path/name (all
// pages, within MaxChartIndexBytes; "_" read as "+") stands for the index; the
// newest tag's manifest (at most 4 MiB, read once per read of the tag list)
// must hold one layer of Helm's chart media type, within MaxChartPackageBytes,
// which is downloaded by its sha256 digest once as a package is. Credentials
// follow the spec's token flow (oci_auth.go): a 401 with a Bearer
// challenge is answered with a token from its realm, asked with the username
// and password; tokens are kept per host, scope and credentials until they
// expire. A registry on a loopback address is spoken to over plain HTTP.
//
// Rendering lives in two rooms below this package. source/render turns the
// files it is handed into objects (plain YAML, kustomize, Helm charts, SOPS
// decryption, the budgets) and knows no git; source/wall runs every render in
// a worker process and keeps what workers answer (the render cache).
//
// The git cache is the room source/gitcache (gitcache.Cache, which Source
// holds and its Fetch, Refresh, Glob, ReadFiles, Descends and Subject forward
// to, git_cache.go): fetches, ref listings, the cache's share between
// tenants, and copying the files a render reads out of a commit (Tree; a
// local clone's commit for Checkout and a directory on disk for
// RenderDirectory through gitcache.Copier, render_dir.go), within the bounds
// Options gives it (gitOptions). How it speaks to hosts (remotes,
// credentials, transport, the host gate) is the room below it, source/git.
// This package composes them: it asks once per commit and path whether a path
// holds a chart (render_helm_probe.go), and schedules renders
// (source_render.go: the cache key, the slots, the deadline, joining a render
// already running), handing the wall render.Options built from Options. The
// rooms' exported names are kept here as aliases (render_names.go,
// git_cache.go).
//
// The webhook receiver lives in its own room, source/webhook (NewWebhookHandler
// and Push here are its names under source, for the callers that know them).
//
// The package owns git and chart repository access, rendering and push parsing only. It does not talk to
// Kubernetes, apply anything, log, or know about Sync objects beyond the ref type of
// the API.
package source
