package chartrepo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	gosync "sync"
	"time"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/result"
)

// chartRepos remembers chart repositories' indexes, by repository and
// credentials, and the packages downloaded, by repository, chart, version
// and digest.
type chartRepos struct {
	mu gosync.Mutex
	// indexes by chartIndexKey, within maxIndexBytes (index_cache.go).
	indexes       map[string]*indexEntry
	maxIndexBytes int64
	// parse holds a token while an index is parsed: a large index takes tens of
	// MiB while it is read, and two at once should not add up.
	parse    chan struct{}
	packages *packageCache
	// verdicts are the signers of chart manifests verified, by manifest
	// digest and keys (verifyChart), within maxVerdicts.
	verdicts map[string]string
}

// maxVerdicts bounds the verdicts kept; past it they are forgotten at once
// (each costs a few requests to learn again).
const maxVerdicts = 4096

func (c *chartRepos) verdict(key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	signer, ok := c.verdicts[key]
	return signer, ok
}

func (c *chartRepos) keepVerdict(key, signer string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.verdicts) >= maxVerdicts {
		clear(c.verdicts)
	}
	c.verdicts[key] = signer
}

// indexEntry is one repository's index as read with one set of credentials:
// the last answer and when, and the read running, which callers join.
type indexEntry struct {
	idx chartIndex
	at  time.Time
	// reading is closed when the read running ends; nil when none runs.
	reading chan struct{}
	err     error
	// layers are an OCI registry's tags resolved to their chart layers
	// (ociLayer), for as long as this read of the tag list.
	layers map[string]chartEntry
	// used and maxAge are the last request's time and interval, size what
	// idx takes (indexSize): index_cache.go keeps entries by them.
	used   time.Time
	maxAge time.Duration
	size   int64
}

func newChartRepos(cacheBytes int64) *chartRepos {
	return &chartRepos{indexes: map[string]*indexEntry{}, maxIndexBytes: maxIndexCacheBytes, parse: make(chan struct{}, 1), packages: newPackageCache(cacheBytes), verdicts: map[string]string{}}
}

// indexKey keys an index by repository and credentials: an index read with
// credentials is never shown to a caller without them.
func indexKey(repository string, auth Auth) string {
	return strings.TrimSuffix(repository, "/") + "\x00" + auth.Key()
}

// chartIndexKey keys req's index by chart too: only the asked-for chart's
// entries are kept of an index (parseIndex), and an OCI registry's tag list is
// its chart's repository's (the chart's name appended to the registry's path).
func chartIndexKey(req Request) string {
	return indexKey(req.Repository, req.Auth) + "\x00" + req.Name
}

// forget drops the indexes of repository read with any credentials: a request
// for a reconcile asks the repository again.
func (c *chartRepos) forget(repository string) {
	prefix := strings.TrimSuffix(repository, "/") + "\x00"
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.indexes {
		if strings.HasPrefix(k, prefix) && e.reading == nil {
			delete(c.indexes, k)
		}
	}
}

// FetchChart resolves req's version range against the repository's index
// (read at most once per MaxAge and credentials, however many callers ask) and
// downloads the package of the newest match, once per version and digest. The
// result.Revision it returns names the repository (URL), the chart and version (Ref,
// "podinfo@6.14.1") and the package's SHA-256 (Package); RenderChart renders
// it. Failures are FetchErrors naming the chart (ChartNotFound,
// AuthenticationFailed, HostUnreachable, …), or RenderErrors for a package over
// its bounds; no error quotes what the repository answered, nor a credential.
func (rs *Repositories) FetchChart(ctx context.Context, req Request) (result.Revision, error) {
	fail := func(reason string, err error) (result.Revision, error) {
		return result.Revision{}, &result.FetchError{URL: req.Repository, Ref: req.Label(), Reason: reason, Err: err}
	}
	constraint, err := chartConstraint(req.Version)
	if err != nil {
		return fail(v1alpha1.ReasonInvalidSemVer, err)
	}
	if err := checkChartURL(req.Repository, req.Name); err != nil {
		return fail(v1alpha1.ReasonUnsupportedURL, err)
	}
	ctx, cancel := context.WithTimeout(ctx, rs.opts.Timeout)
	defer cancel()
	idx, err := rs.chartIndex(ctx, req)
	if err != nil {
		return result.Revision{}, err
	}
	entry, ok := idx.newest(req.Name, constraint)
	if !ok {
		return fail(v1alpha1.ReasonChartNotFound, noVersionError(idx, req))
	}
	if isOCI(req.Repository) {
		if entry, err = rs.ociLayer(ctx, req, entry); err != nil {
			return result.Revision{}, err
		}
	}
	var signer string
	if req.Keys != nil {
		if signer, err = rs.verifyChart(ctx, req, entry); err != nil {
			return result.Revision{}, err
		}
	}
	sum, err := rs.chartPackage(ctx, req, entry)
	if err != nil {
		return result.Revision{}, err
	}
	return result.Revision{URL: req.Repository, Ref: req.Name + "@" + entry.Version, Package: sum, Signer: signer}, nil
}

// noVersionError says why an index has no version of the chart for req.
func noVersionError(idx chartIndex, req Request) error {
	versions := idx[req.Name]
	if len(versions) == 0 && isOCI(req.Repository) {
		return fmt.Errorf("the registry has no tag of chart %s", req.Name)
	}
	if len(versions) == 0 {
		return fmt.Errorf("the repository's index has no chart named %q", req.Name)
	}
	want := req.Version
	if want == "" {
		want = "*"
	}
	return fmt.Errorf("none of the %d versions of chart %s in the repository's index satisfies %q", len(versions), req.Name, want)
}

// checkChartURL accepts http(s) chart repositories and OCI registries
// (oci://host/path, the chart's name appended to the path).
func checkChartURL(repository, name string) error {
	if err := result.CheckUserinfo(repository); err != nil {
		return fmt.Errorf("spec.source.chart.repository: %w", err)
	}
	switch {
	case strings.HasPrefix(repository, "https://"), strings.HasPrefix(repository, "http://"):
		return nil
	case isOCI(repository):
		_, err := ociRepository(Request{Repository: repository, Name: name})
		return err
	}
	return errors.New("spec.source.chart.repository: a chart repository is an http:// or https:// URL, or an OCI registry oci://host/path")
}

// chartIndex returns the repository's index, read at most once per
// req.MaxAge for req's credentials: callers that find a read running wait for
// it and share its answer (or its failure).
func (rs *Repositories) chartIndex(ctx context.Context, req Request) (chartIndex, error) {
	key := chartIndexKey(req)
	c := rs.charts
	for {
		c.mu.Lock()
		c.sweepLocked(rs.now())
		e := c.indexes[key]
		if e == nil {
			e = &indexEntry{}
			c.indexes[key] = e
		}
		e.useLocked(rs.now(), req.MaxAge)
		if e.reading == nil && e.idx != nil && req.MaxAge > 0 && rs.now().Sub(e.at) <= req.MaxAge {
			idx := e.idx
			c.mu.Unlock()
			return idx, nil
		}
		if e.reading != nil {
			wait := e.reading
			c.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return nil, &result.FetchError{URL: req.Repository, Ref: req.Label(), Reason: v1alpha1.ReasonHostUnreachable, Err: fmt.Errorf("waiting for the repository's index: %w", ctx.Err())}
			}
			c.mu.Lock()
			err, idx := e.err, e.idx
			c.mu.Unlock()
			if err != nil {
				return nil, err
			}
			if idx != nil {
				return idx, nil
			}
			continue
		}
		done := make(chan struct{})
		e.reading = done
		c.mu.Unlock()
		idx, err := rs.readIndex(ctx, req)
		c.mu.Lock()
		e.reading, e.err = nil, err
		if err == nil {
			e.idx, e.at, e.layers, e.size = idx, rs.now(), nil, indexSize(idx)
			c.sweepLocked(rs.now())
		}
		c.mu.Unlock()
		close(done)
		return idx, err
	}
}

// readIndex downloads and parses the repository's index within
// Options.MaxChartIndexBytes, one parse at a time.
func (rs *Repositories) readIndex(ctx context.Context, req Request) (chartIndex, error) {
	if isOCI(req.Repository) {
		return rs.readTags(ctx, req)
	}
	url := strings.TrimSuffix(req.Repository, "/") + "/index.yaml"
	data, err := rs.download(ctx, url, req, rs.opts.MaxChartIndexBytes, "index.yaml")
	if err != nil {
		return nil, err
	}
	select {
	case rs.charts.parse <- struct{}{}:
		defer func() { <-rs.charts.parse }()
	case <-ctx.Done():
		return nil, &result.FetchError{URL: req.Repository, Ref: req.Label(), Reason: v1alpha1.ReasonHostUnreachable, Err: ctx.Err()}
	}
	idx, err := parseIndex(data, rs.opts.MaxYAMLNodesPerFile, req.Name)
	if err != nil {
		reason := v1alpha1.ReasonChartRepositoryFailed
		var over *result.OverBudget
		if errors.As(err, &over) || errors.Is(err, errIndexLayout) {
			reason = v1alpha1.ReasonRenderLimitExceeded
		}
		return nil, &result.FetchError{URL: req.Repository, Ref: req.Label(), Reason: reason, Err: err}
	}
	return idx, nil
}
