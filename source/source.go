package source

import (
	"fmt"
	"os"
	"path/filepath"
	gosync "sync"
	"time"

	"tether.dev/tether/source/artifact"
	"tether.dev/tether/source/chartrepo"
	"tether.dev/tether/source/gitcache"
	"tether.dev/tether/source/oci"
	"tether.dev/tether/source/render"
	"tether.dev/tether/source/wall"
)

// Options bound what the source may cost. Every limit exists because repository
// content is hostile until proven otherwise.
type Options struct {
	// CacheDir holds one bare repository per URL; it survives restarts so that a
	// restart fetches only what changed. Required.
	CacheDir string
	// MaxFileSize is the largest file copied out of a commit. Larger files are left
	// out, and rendering fails if it needs one of them.
	MaxFileSize int64
	// MaxTreeSize is the most bytes of one commit's files that one render reads:
	// those of the path rendered and of the kustomization roots it reaches.
	MaxTreeSize int64
	// MaxTreeEntries is the most git tree entries one render reads: those of the
	// directories rendering needs (the path and the kustomization roots it
	// reaches), each counted every time the commit names its tree, so that one
	// tree named a thousand times cannot make a small commit name a million files.
	MaxTreeEntries int
	// MaxYAMLNodesPerFile is the most YAML nodes one file may hold (counted, before
	// it is parsed, as a bound from its text) and expand to through aliases.
	MaxYAMLNodesPerFile int
	// MaxYAMLNodesPerRender is the most YAML nodes the files of one render may
	// hold together, counted as for MaxYAMLNodesPerFile.
	MaxYAMLNodesPerRender int
	// MaxObjects is the most objects one path may render to.
	MaxObjects int
	// MaxRenderedBytes is the most bytes (as JSON) the objects of one render may
	// take; it bounds what kustomize or YAML aliases can make of a small input.
	MaxRenderedBytes int64
	// RenderCacheBytes bounds the rendered (commit, path) results kept in memory,
	// by what they take there: each object is held as its JSON and decoded on a
	// hit (a seventh of what the decoded objects take), shared fairly between the tenants
	// that ask for renders (WithTenant): the least recently used render of the
	// tenant holding the most goes first.
	RenderCacheBytes int64
	// MaxConcurrentRenders is how many renders may run at once, whatever the
	// number of workers: each may take up to MaxTreeSize and a few times
	// MaxRenderedBytes of memory at its peak.
	MaxConcurrentRenders int
	// RenderTimeout bounds one render. A caller whose render has not finished by
	// then gets a RenderError naming the path (ErrRenderTimeout), and the caller's
	// render slot is free again at once, as it is when the caller's context ends.
	RenderTimeout time.Duration
	// RenderMemoryLimit is the most memory one render's worker process may
	// hold (source/wall): past it the worker ends and the render fails
	// with RenderLimitExceeded. Workers run beside the agent, in its
	// container: MaxConcurrentRenders + MaxRendersGivenUp of them at most.
	RenderMemoryLimit int64
	// RenderWorkerPath is the executable a render worker runs; empty means the
	// agent's own (os.Executable), which serves workers (ServeRenderWorker).
	RenderWorkerPath string
	// MaxRendersGivenUp bounds the renders that still run after their callers
	// stopped waiting (RenderTimeout, or the caller's context): kustomize cannot
	// be interrupted, so each holds its memory until it finishes. At most
	// MaxConcurrentRenders + MaxRendersGivenUp renders run at once, those given
	// up on included; while that many run, a new render waits (within its own
	// deadline) for one to finish, however many slow commits are pushed.
	MaxRendersGivenUp int
	// Timeout bounds one Fetch, so that a host that accepts a connection and then
	// says nothing cannot hold a worker forever.
	Timeout time.Duration
	// ListTimeout bounds one ref listing, a small answer that a healthy host
	// gives at once; Timeout still bounds the whole Fetch.
	ListTimeout time.Duration
	// MaxFetchesPerHost bounds the network conversations (ref listings, fetches)
	// with one git host at once, so that a host that accepts connections and
	// then says nothing holds at most this many workers; half as many more
	// (at least one) wait in the host's line for a few seconds (least recently
	// served first, so that Syncs polling often cannot starve one polling
	// rarely), the rest get ReasonHostBusy at once. Keep it below the number
	// of workers.
	MaxFetchesPerHost int
	// HostFailureMemory is how long a host that could not be reached is not asked
	// again: Fetches of its repositories fail at once with its last failure.
	HostFailureMemory time.Duration
	// MaxCacheBytes caps the disk the git cache takes, shared fairly between the
	// tenants (Request.Tenant) that use it (see source/gitcache, share.go): a Fetch that
	// would take the cache past the cap, or its tenant past its share, stops with
	// ReasonCacheFull. Only repositories of tenants over their share, or of none,
	// are removed to make room for a tenant within its own, and a tenant over its
	// share gives up only its own (see CacheKeepRecent). 0 means no cap.
	MaxCacheBytes int64
	// CacheIdle is how long a cached repository that no Fetch or Render asked for
	// is kept; then it is removed from memory and disk.
	CacheIdle time.Duration
	// MaxChartIndexBytes bounds a chart repository's index.yaml as downloaded.
	// The index is read as a stream of one chart at a time (source/chartrepo), so
	// that what it takes in memory while it is parsed stays far below its size
	// held as a YAML tree.
	MaxChartIndexBytes int64
	// MaxChartPackageBytes bounds a chart package (.tgz) as downloaded.
	MaxChartPackageBytes int64
	// MaxChartFiles bounds the entries of a chart package; its unpacked bytes
	// are bounded by MaxFileSize per file and MaxTreeSize in all.
	MaxChartFiles int
	// ChartCacheBytes bounds the chart packages kept in memory (as
	// downloaded), the least recently used going first.
	ChartCacheBytes int64
	// CacheKeepRecent is how long a tenant keeps a repository it asked for when
	// it is over its share: a fetch past the share first gives up the tenant's
	// own repositories (only its own) that it has not asked for in this long,
	// least recently asked first; one it asked for since is never given up for
	// another of its own, so that its callers do not take turns fetching, and the
	// fetch is refused instead.
	CacheKeepRecent time.Duration
	// MaxArtifactBytes bounds an OCI artifact's content layer as downloaded
	// (spec.source.oci); what it unpacks to is bounded by MaxFileSize,
	// MaxTreeSize and MaxTreeEntries, as a commit's files are.
	MaxArtifactBytes int64
	// ArtifactCacheBytes bounds the unpacked artifacts kept on disk under
	// CacheDir/artifacts, the least recently used going first.
	ArtifactCacheBytes int64
	// AllowFileURLs lets Syncs name file:// repositories. A file:// URL reads the
	// agent's own file system, so it is refused unless the agent allows it (for
	// demos and tests).
	AllowFileURLs bool
}

// DefaultOptions returns limits that fit repositories of thousands of manifests
// and an agent with 512 MiB of memory: two renders at their peak (each reading
// at most 32 MiB of files and making at most 16 MiB of objects, held a few times
// over as JSON, objects and the caller's copy) and the render cache fit in about
// 300 MiB.
func DefaultOptions() Options {
	r, g := render.DefaultOptions(), gitcache.DefaultOptions()
	return Options{
		MaxFileSize:           g.MaxFileSize,
		MaxTreeSize:           g.MaxTreeSize,
		MaxTreeEntries:        g.MaxTreeEntries,
		MaxYAMLNodesPerFile:   r.MaxYAMLNodesPerFile,
		MaxYAMLNodesPerRender: r.MaxYAMLNodesPerRender,
		MaxObjects:            r.MaxObjects,
		MaxRenderedBytes:      r.MaxRenderedBytes,
		RenderCacheBytes:      64 << 20,
		MaxConcurrentRenders:  2,
		MaxRendersGivenUp:     2,
		RenderTimeout:         r.Timeout,
		RenderMemoryLimit:     r.MemoryLimit,
		Timeout:               g.Timeout,
		ListTimeout:           g.ListTimeout,
		MaxFetchesPerHost:     g.MaxFetchesPerHost,
		HostFailureMemory:     g.HostFailureMemory,
		MaxCacheBytes:         g.MaxCacheBytes,
		CacheIdle:             g.CacheIdle,
		MaxChartIndexBytes:    32 << 20,
		MaxChartPackageBytes:  r.MaxChartPackageBytes,
		MaxChartFiles:         r.MaxChartFiles,
		ChartCacheBytes:       32 << 20,
		CacheKeepRecent:       g.CacheKeepRecent,
		MaxArtifactBytes:      g.MaxTreeSize,
		ArtifactCacheBytes:    1 << 30,
	}
}

// Source fetches and renders git repositories. It is safe for concurrent use: work
// on one URL is serialized, different URLs proceed in parallel. It composes its
// parts: the git cache (source/gitcache) fetches and reads commits, the render
// wall (source/wall) runs renders and keeps their results, chart repositories
// (source/chartrepo) are read for packaged charts, and the fields below
// schedule renders (source_render.go).
type Source struct {
	opts Options

	// git holds the fetched repositories: fetches, listings, the host gate,
	// the cache's share between tenants, and reading commits' trees.
	git     *gitcache.Cache
	renders *wall.Cache
	// rendering holds a token per caller whose render is running.
	rendering chan struct{}
	// live holds a token per render running, whether its caller still waits
	// for it or gave up (see MaxRendersGivenUp).
	live chan struct{}
	// renderMu guards inflight, the renders running by cache key, which callers
	// of the same key join instead of starting another.
	renderMu gosync.Mutex
	inflight map[string]*renderCall
	// chartPaths remembers, by (URL, commit, path), whether the path holds a Helm
	// chart (see holdsChart); guarded by renderMu.
	chartPaths map[string]bool
	// charts reads chart repositories: their indexes and packages.
	charts *chartrepo.Repositories
	// beforeRender, when set (by tests), runs before each render starts.
	beforeRender func(dir string)
	// verdicts holds the signers of revisions verified (verified.go).
	verdicts verdicts
	// artifacts fetches OCI artifacts and keeps them unpacked (artifact.go).
	artifacts *artifact.Store
}

// New returns a Source that caches repositories under opts.CacheDir.
func New(opts Options) (*Source, error) {
	if opts.CacheDir == "" {
		return nil, fmt.Errorf("source: a cache directory is required")
	}
	if err := os.MkdirAll(opts.CacheDir, 0o700); err != nil {
		return nil, fmt.Errorf("source: creating cache directory: %w", err)
	}
	defaults := DefaultOptions()
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = defaults.MaxFileSize
	}
	if opts.MaxTreeSize <= 0 {
		opts.MaxTreeSize = defaults.MaxTreeSize
	}
	if opts.MaxTreeEntries <= 0 {
		opts.MaxTreeEntries = defaults.MaxTreeEntries
	}
	if opts.MaxYAMLNodesPerFile <= 0 {
		opts.MaxYAMLNodesPerFile = defaults.MaxYAMLNodesPerFile
	}
	if opts.MaxYAMLNodesPerRender <= 0 {
		opts.MaxYAMLNodesPerRender = defaults.MaxYAMLNodesPerRender
	}
	if opts.MaxObjects <= 0 {
		opts.MaxObjects = defaults.MaxObjects
	}
	if opts.MaxRenderedBytes <= 0 {
		opts.MaxRenderedBytes = defaults.MaxRenderedBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = defaults.Timeout
	}
	if opts.RenderCacheBytes <= 0 {
		opts.RenderCacheBytes = defaults.RenderCacheBytes
	}
	if opts.ListTimeout <= 0 {
		opts.ListTimeout = defaults.ListTimeout
	}
	if opts.MaxFetchesPerHost <= 0 {
		opts.MaxFetchesPerHost = defaults.MaxFetchesPerHost
	}
	if opts.HostFailureMemory <= 0 {
		opts.HostFailureMemory = defaults.HostFailureMemory
	}
	if opts.CacheKeepRecent <= 0 {
		opts.CacheKeepRecent = defaults.CacheKeepRecent
	}
	if opts.CacheIdle <= 0 {
		opts.CacheIdle = defaults.CacheIdle
	}
	if opts.MaxConcurrentRenders <= 0 {
		opts.MaxConcurrentRenders = defaults.MaxConcurrentRenders
	}
	if opts.MaxRendersGivenUp <= 0 {
		opts.MaxRendersGivenUp = defaults.MaxRendersGivenUp
	}
	if opts.RenderTimeout <= 0 {
		opts.RenderTimeout = defaults.RenderTimeout
	}
	if opts.RenderMemoryLimit <= 0 {
		opts.RenderMemoryLimit = defaults.RenderMemoryLimit
	}
	if opts.MaxArtifactBytes <= 0 {
		opts.MaxArtifactBytes = defaults.MaxArtifactBytes
	}
	if opts.ArtifactCacheBytes <= 0 {
		opts.ArtifactCacheBytes = defaults.ArtifactCacheBytes
	}
	opts = withChartDefaults(opts, defaults)
	cache, err := gitcache.New(gitOptions(opts))
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	charts, err := chartrepo.NewRepositories(chartOptions(opts))
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	artifacts, err := artifact.New(artifactOptions(opts))
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	return &Source{
		opts:       opts,
		artifacts:  artifacts,
		git:        cache,
		charts:     charts,
		renders:    wall.NewCache(opts.RenderCacheBytes),
		rendering:  make(chan struct{}, opts.MaxConcurrentRenders),
		live:       make(chan struct{}, opts.MaxConcurrentRenders+opts.MaxRendersGivenUp),
		inflight:   map[string]*renderCall{},
		chartPaths: map[string]bool{},
	}, nil
}

// Defaults of the bounds on what one render reads (see Options).
const (
	// DefaultMaxTreeEntries: ten times the entries of a large deploy repository
	// (20,000 manifests in nested directories), and at a few hundred bytes an
	// entry a few tens of MiB at most (gitcache.DefaultMaxTreeEntries).
	DefaultMaxTreeEntries = gitcache.DefaultMaxTreeEntries
	// DefaultRenderMemoryLimit bounds one render's worker: whatever a
	// repository holds costs at most this, in a process the agent does not
	// depend on. kube-prometheus-stack, the most installed chart, renders in
	// about 200 MiB (it fails at 152 MiB).
	DefaultRenderMemoryLimit = render.DefaultMemoryLimit
	// DefaultMaxYAMLNodesPerFile and DefaultMaxYAMLNodesPerRender fail a
	// render that reads too much YAML fast and by name, before the worker's
	// memory would: kube-prometheus-stack reads between 0.8 and 1.6 million
	// nodes, about a quarter of the bound per render.
	DefaultMaxYAMLNodesPerFile   = render.DefaultMaxYAMLNodesPerFile
	DefaultMaxYAMLNodesPerRender = render.DefaultMaxYAMLNodesPerRender
)

// artifactOptions are the artifact store's options among opts.
func artifactOptions(opts Options) artifact.Options {
	return artifact.Options{Dir: filepath.Join(opts.CacheDir, "artifacts"), MaxLayerBytes: opts.MaxArtifactBytes,
		MaxFileSize: opts.MaxFileSize, MaxTreeSize: opts.MaxTreeSize, MaxTreeEntries: opts.MaxTreeEntries,
		MaxDiskBytes: opts.ArtifactCacheBytes, OCI: oci.Options{Timeout: opts.Timeout}}
}

// gitOptions are the git cache's options among opts.
func gitOptions(opts Options) gitcache.Options {
	return gitcache.Options{CacheDir: opts.CacheDir, Timeout: opts.Timeout, ListTimeout: opts.ListTimeout,
		MaxFetchesPerHost: opts.MaxFetchesPerHost, HostFailureMemory: opts.HostFailureMemory,
		MaxCacheBytes: opts.MaxCacheBytes, CacheIdle: opts.CacheIdle, CacheKeepRecent: opts.CacheKeepRecent,
		AllowFileURLs: opts.AllowFileURLs, TreeBounds: treeBounds(opts)}
}

// treeBounds are the bounds of reading one tree among opts.
func treeBounds(opts Options) gitcache.TreeBounds {
	return gitcache.TreeBounds{MaxFileSize: opts.MaxFileSize, MaxTreeSize: opts.MaxTreeSize, MaxTreeEntries: opts.MaxTreeEntries}
}

// chartOptions are the bounds of chart repositories among opts.
func chartOptions(opts Options) chartrepo.Options {
	return chartrepo.Options{MaxChartIndexBytes: opts.MaxChartIndexBytes, MaxChartPackageBytes: opts.MaxChartPackageBytes,
		ChartCacheBytes: opts.ChartCacheBytes, MaxYAMLNodesPerFile: opts.MaxYAMLNodesPerFile, Timeout: opts.Timeout}
}

// withChartDefaults fills the chart repository bounds opts leaves at zero.
func withChartDefaults(opts, defaults Options) Options {
	if opts.MaxChartIndexBytes <= 0 {
		opts.MaxChartIndexBytes = defaults.MaxChartIndexBytes
	}
	if opts.MaxChartPackageBytes <= 0 {
		opts.MaxChartPackageBytes = defaults.MaxChartPackageBytes
	}
	if opts.MaxChartFiles <= 0 {
		opts.MaxChartFiles = defaults.MaxChartFiles
	}
	if opts.ChartCacheBytes <= 0 {
		opts.ChartCacheBytes = defaults.ChartCacheBytes
	}
	return opts
}
