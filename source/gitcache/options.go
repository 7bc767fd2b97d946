package gitcache

import (
	"time"

	"tether.dev/tether/source/render"
)

// Options bound what the cache may cost. source.New builds them from the git
// fields of source.Options, whose documentation says what each bounds and why;
// New fills none of them in, so a caller other than source sets them all.
type Options struct {
	// CacheDir holds one bare repository per repository, below CacheDir/git.
	// Required; New creates it if it is missing.
	CacheDir string
	// Timeout bounds one Fetch (source.Options.Timeout).
	Timeout time.Duration
	// ListTimeout bounds one ref listing (source.Options.ListTimeout).
	ListTimeout time.Duration
	// MaxFetchesPerHost bounds the conversations with one git host at once
	// (source.Options.MaxFetchesPerHost).
	MaxFetchesPerHost int
	// HostFailureMemory is how long a host that could not be reached is not
	// asked again (source.Options.HostFailureMemory).
	HostFailureMemory time.Duration
	// MaxCacheBytes caps the disk the cache takes, shared fairly between
	// tenants (share.go); 0 means no cap.
	MaxCacheBytes int64
	// CacheIdle is how long a repository no caller asked for is kept.
	CacheIdle time.Duration
	// CacheKeepRecent is how long a tenant over its share keeps a repository
	// it asked for (source.Options.CacheKeepRecent).
	CacheKeepRecent time.Duration
	// AllowFileURLs lets callers name file:// repositories, which read the
	// agent's own file system.
	AllowFileURLs bool
	// TreeBounds bound what reading a commit's tree for one render (or one
	// Glob) may take.
	TreeBounds
}

// TreeBounds bound one reading of a tree (tree.go), the same for a commit in
// the cache, a local clone's commit (NewCommitCopier) and a directory on disk
// (NewDiskCopier), so that what the agent renders and what the CLI renders
// are read within the same limits.
type TreeBounds struct {
	// MaxFileSize is the largest file copied; a larger one is left out, and
	// reading fails if the directory read needs it.
	MaxFileSize int64
	// MaxTreeSize is the most bytes of files one reading copies.
	MaxTreeSize int64
	// MaxTreeEntries is the most tree entries one reading reads, each
	// counted every time the commit names its tree.
	MaxTreeEntries int
}

// DefaultMaxTreeEntries bounds the tree entries one reading reads: ten times
// the entries of a large deploy repository (20,000 manifests in nested
// directories), and at a few hundred bytes an entry a few tens of MiB at most.
const DefaultMaxTreeEntries = 100_000

// DefaultOptions returns the bounds source.DefaultOptions gives the cache (see
// there why), CacheDir left to the caller.
func DefaultOptions() Options {
	r := render.DefaultOptions()
	return Options{
		Timeout:           5 * time.Minute,
		ListTimeout:       30 * time.Second,
		MaxFetchesPerHost: 2,
		HostFailureMemory: 30 * time.Second,
		MaxCacheBytes:     768 << 20,
		CacheIdle:         time.Hour,
		CacheKeepRecent:   10 * time.Minute,
		TreeBounds: TreeBounds{
			MaxFileSize:    r.MaxFileSize,
			MaxTreeSize:    r.MaxTreeSize,
			MaxTreeEntries: DefaultMaxTreeEntries,
		},
	}
}
