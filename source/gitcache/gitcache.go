package gitcache

import (
	"fmt"
	"os"
	"path/filepath"
	gosync "sync"
	"sync/atomic"
	"time"

	"tether.dev/tether/source/git"
)

// Cache is the on-disk cache of git repositories: it fetches the commits
// callers ask for (Fetch), shares ref listings between them, keeps the
// disk it takes within Options.MaxCacheBytes shared fairly between tenants,
// removes repositories nobody asks for, and reads what renders, Globs and
// history need from the commits it holds. It is safe for concurrent use:
// work on one repository is serialized, different repositories proceed in
// parallel.
type Cache struct {
	opts Options

	// dir holds the bare repositories, one directory a repository.
	dir   reposDir
	mu    gosync.Mutex
	repos map[string]*repoEntry // by cacheKey of the URL
	// swept is when idle repositories were last looked for.
	swept time.Time
	// started is when New made the Cache (see removeStrayDirs).
	started time.Time

	hosts *git.HostGate
	// receiving counts the pack bytes written by the fetches in flight, which
	// count against Options.MaxCacheBytes (see packCap).
	receiving atomic.Int64
	// remotes works out how to reach a repository with its credentials.
	remotes *git.Remotes
	now     func() time.Time
}

// New returns a Cache that keeps repositories under opts.CacheDir.
func New(opts Options) (*Cache, error) {
	if opts.CacheDir == "" {
		return nil, fmt.Errorf("a cache directory is required")
	}
	if err := os.MkdirAll(opts.CacheDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating cache directory: %w", err)
	}
	remotes, err := git.NewRemotes(opts.CacheDir)
	if err != nil {
		return nil, err
	}
	return &Cache{
		opts:    opts,
		dir:     reposDir(filepath.Join(opts.CacheDir, "git")),
		remotes: remotes,
		repos:   map[string]*repoEntry{},
		hosts:   git.NewHostGate(opts.MaxFetchesPerHost, opts.HostFailureMemory),
		now:     time.Now,
		started: time.Now(),
	}, nil
}
