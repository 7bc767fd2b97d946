package chartrepo

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	gosync "sync"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/result"
)

// packageCache keeps downloaded chart packages (compressed, as downloaded) by
// repository, chart, version and SHA-256, least recently used first out,
// within a budget of bytes. A package is downloaded once per version and
// digest however many Syncs render it, and is there to render again while the
// repository cannot be asked.
type packageCache struct {
	mu       gosync.Mutex
	maxBytes int64
	bytes    int64
	order    *list.List // of *packageEntry, most recently used first
	entries  map[string]*list.Element
	// fetching holds the downloads running by key, which callers join.
	fetching map[string]*packageCall
}

type packageEntry struct {
	key  string
	sum  string
	data []byte
}

type packageCall struct {
	done chan struct{}
	sum  string
	err  error
}

func newPackageCache(maxBytes int64) *packageCache {
	return &packageCache{maxBytes: maxBytes, order: list.New(), entries: map[string]*list.Element{}, fetching: map[string]*packageCall{}}
}

// packageKey keys a package by where it comes from and what the index says of
// it; a version republished with another digest is another package.
func packageKey(repository, name, version, digest string) string {
	return strings.TrimSuffix(repository, "/") + "\x00" + name + "\x00" + version + "\x00" + digest
}

// bySum keys a package by its own SHA-256 (what a result.Revision's Package holds).
func bySum(repository, ref, sum string) string {
	return strings.TrimSuffix(repository, "/") + "\x00" + ref + "\x00sha256:" + sum
}

func (c *packageCache) get(key string) (*packageEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*packageEntry), true
}

// put keeps data under both keys; a package larger than the budget is not kept.
func (c *packageCache) put(keys []string, sum string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int64(len(data)) > c.maxBytes {
		return
	}
	for _, key := range keys {
		if el, ok := c.entries[key]; ok {
			c.remove(el)
		}
		c.entries[key] = c.order.PushFront(&packageEntry{key: key, sum: sum, data: data})
		c.bytes += int64(len(data))
	}
	for c.bytes > c.maxBytes {
		c.remove(c.order.Back())
	}
}

func (c *packageCache) remove(el *list.Element) {
	e := c.order.Remove(el).(*packageEntry)
	delete(c.entries, e.key)
	c.bytes -= int64(len(e.data))
}

// chartPackage returns the SHA-256 of entry's package, downloading it unless
// the cache holds it; callers of the same package share one download.
func (rs *Repositories) chartPackage(ctx context.Context, req Request, entry chartEntry) (string, error) {
	c := rs.charts.packages
	key := packageKey(req.Repository, req.Name, entry.Version, entry.Digest)
	if e, ok := c.get(key); ok {
		return e.sum, nil
	}
	c.mu.Lock()
	call, running := c.fetching[key]
	if !running {
		call = &packageCall{done: make(chan struct{})}
		c.fetching[key] = call
	}
	c.mu.Unlock()
	if running {
		select {
		case <-call.done:
			return call.sum, call.err
		case <-ctx.Done():
			return "", &result.FetchError{URL: req.Repository, Ref: req.Label(), Reason: v1alpha1.ReasonHostUnreachable, Err: fmt.Errorf("waiting for the chart's package: %w", ctx.Err())}
		}
	}
	defer func() {
		c.mu.Lock()
		delete(c.fetching, key)
		c.mu.Unlock()
		close(call.done)
	}()
	call.sum, call.err = rs.downloadPackage(ctx, req, entry, key)
	return call.sum, call.err
}

// downloadPackage downloads entry's package within Options.MaxChartPackageBytes,
// checks it against the index's digest, and keeps it.
func (rs *Repositories) downloadPackage(ctx context.Context, req Request, entry chartEntry, key string) (string, error) {
	ref := req.Name + "@" + entry.Version
	fail := func(err error) (string, error) {
		return "", &result.FetchError{URL: req.Repository, Ref: req.Label(), Reason: v1alpha1.ReasonChartRepositoryFailed, Err: fmt.Errorf("chart %s: %w", ref, err)}
	}
	data, err := rs.packageData(ctx, req, entry)
	if err != nil {
		var fe *result.FetchError
		if errors.As(err, &fe) {
			return "", err
		}
		return fail(err)
	}
	raw := sha256.Sum256(data)
	sum := hex.EncodeToString(raw[:])
	if want := strings.TrimPrefix(strings.ToLower(entry.Digest), "sha256:"); want != "" && want != sum {
		return fail(fmt.Errorf("the package's SHA-256 is %s, the repository's index says %.80s", sum, want))
	}
	rs.charts.packages.put([]string{key, bySum(req.Repository, ref, sum)}, sum, data)
	return sum, nil
}

// packageData downloads entry's package: an OCI registry's chart layer, or
// the index's first URL.
func (rs *Repositories) packageData(ctx context.Context, req Request, entry chartEntry) ([]byte, error) {
	if isOCI(req.Repository) {
		return rs.downloadLayer(ctx, req, entry)
	}
	if len(entry.URLs) == 0 {
		return nil, errors.New("the repository's index gives no URL for the package")
	}
	u, err := packageURL(req.Repository, entry.URLs[0])
	if err != nil {
		return nil, err
	}
	return rs.download(ctx, u, req, rs.opts.MaxChartPackageBytes, "the package of chart "+req.Name+"@"+entry.Version)
}

// packageURL resolves a package URL of an index against the repository, as
// Helm does: relative to the repository's URL with a trailing slash. Only
// http(s) URLs are followed.
func packageURL(repository, ref string) (string, error) {
	base, err := url.Parse(strings.TrimSuffix(repository, "/") + "/")
	if err != nil {
		return "", fmt.Errorf("the repository's URL: %w", errors.Unwrap(err))
	}
	rel, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("the index's package URL %.200q cannot be parsed", ref)
	}
	u := base.ResolveReference(rel)
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("the index's package URL %.200q is not http(s)", ref)
	}
	return u.String(), nil
}
