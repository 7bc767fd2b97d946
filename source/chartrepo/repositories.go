package chartrepo

import (
	"net/http"
	"time"

	"tether.dev/tether/source/oci"
	"tether.dev/tether/source/result"
)

// Auth holds a chart repository's credentials, as a git repository's are.
type Auth = result.Auth

// Request names a packaged chart to fetch from a chart repository
// (result.ChartRequest).
type Request = result.ChartRequest

// Options bound what chart repositories may cost. Every limit exists because
// a repository's answers are hostile until proven otherwise.
type Options struct {
	// MaxChartIndexBytes bounds a chart repository's index.yaml as downloaded,
	// and an OCI registry's tag list in all its pages.
	MaxChartIndexBytes int64
	// MaxChartPackageBytes bounds a chart package (.tgz) as downloaded.
	MaxChartPackageBytes int64
	// ChartCacheBytes bounds the chart packages kept in memory (as downloaded),
	// the least recently used going first.
	ChartCacheBytes int64
	// MaxYAMLNodesPerFile bounds the YAML nodes of one chart's part of an index.
	MaxYAMLNodesPerFile int
	// Timeout bounds one conversation with a repository.
	Timeout time.Duration
}

// DefaultOptions returns the bounds Tether runs with: an index of 32 MiB, a
// package of 8 MiB, 32 MiB of packages kept, the YAML node bound of source's
// files, and five minutes a conversation.
func DefaultOptions() Options {
	return Options{MaxChartIndexBytes: 32 << 20, MaxChartPackageBytes: 8 << 20, ChartCacheBytes: 32 << 20,
		MaxYAMLNodesPerFile: 1 << 18, Timeout: 5 * time.Minute}
}

// Repositories reads chart repositories (index.yaml over http(s), and OCI
// registries): their indexes, once per repository, credentials and MaxAge
// however many callers ask, and their packages, once per version and digest.
// It is safe for concurrent use.
type Repositories struct {
	opts   Options
	charts *chartRepos
	// client is the HTTP client of repositories without a CA bundle of their
	// own (http.go).
	client *http.Client
	// oci is the client of OCI registries (oci.go).
	oci *oci.Client
	now func() time.Time
}

// NewRepositories returns Repositories bounded by opts, which must be filled
// (source fills what its caller leaves at zero).
func NewRepositories(opts Options) (*Repositories, error) {
	client, err := newChartClient()
	if err != nil {
		return nil, err
	}
	registries, err := newOCIClient(opts)
	if err != nil {
		return nil, err
	}
	return &Repositories{opts: opts, charts: newChartRepos(opts.ChartCacheBytes), client: client, oci: registries, now: time.Now}, nil
}

// PackageKey names the package of rev (a FetchChart's revision): by
// repository, chart, version and digest.
func PackageKey(rev result.Revision) string { return bySum(rev.URL, rev.Ref, rev.Package) }

// Package returns the package FetchChart downloaded for rev, while the cache
// holds it.
func (rs *Repositories) Package(rev result.Revision) ([]byte, bool) {
	entry, ok := rs.charts.packages.get(PackageKey(rev))
	if !ok {
		return nil, false
	}
	return entry.data, true
}

// Forget drops the indexes of repository read with any credentials: a request
// for a reconcile asks the repository again.
func (rs *Repositories) Forget(repository string) { rs.charts.forget(repository) }
