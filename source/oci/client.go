package oci

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	gosync "sync"
	"time"

	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/git"
)

// Options bound what a registry may cost. Every bound exists because a
// registry's answers are hostile until proven otherwise.
type Options struct {
	// MaxManifestBytes bounds a manifest or an image index (and a referrers
	// list): the size the distribution spec asks registries to accept at
	// least, and the bound of its clients (oras, Helm).
	MaxManifestBytes int64
	// MaxTags bounds a tag list: one with more tags is refused.
	MaxTags int
	// MaxTagListBytes bounds a tag list as read, all its pages together.
	MaxTagListBytes int64
	// MaxTagPages bounds the pages of one tag list.
	MaxTagPages int
	// MaxReferrers bounds the manifests Referrers lists.
	MaxReferrers int
	// MaxIndexManifests bounds the manifests of an image index read to find
	// the one wanted, when the index does not say their artifact types.
	MaxIndexManifests int
	// Timeout bounds one call.
	Timeout time.Duration
}

// DefaultOptions returns the bounds Tether runs with: manifests of 4 MiB,
// 100,000 tags in 32 MiB and 1,000 pages, 1,000 referrers, 16 manifests of
// an index read, and a minute a call.
func DefaultOptions() Options {
	return Options{MaxManifestBytes: 4 << 20, MaxTags: 100_000, MaxTagListBytes: 32 << 20, MaxTagPages: 1000,
		MaxReferrers: 1000, MaxIndexManifests: 16, Timeout: time.Minute}
}

// withDefaults is o with its zero fields taken from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.MaxManifestBytes <= 0 {
		o.MaxManifestBytes = d.MaxManifestBytes
	}
	if o.MaxTags <= 0 {
		o.MaxTags = d.MaxTags
	}
	if o.MaxTagListBytes <= 0 {
		o.MaxTagListBytes = d.MaxTagListBytes
	}
	if o.MaxTagPages <= 0 {
		o.MaxTagPages = d.MaxTagPages
	}
	if o.MaxReferrers <= 0 {
		o.MaxReferrers = d.MaxReferrers
	}
	if o.MaxIndexManifests <= 0 {
		o.MaxIndexManifests = d.MaxIndexManifests
	}
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	return o
}

// Bounds of what a Client keeps: past them, what it keeps is dropped and
// asked for again.
const (
	// maxTokenCaches bounds the token caches (one per credentials).
	maxTokenCaches = 1024
	// maxCABundles bounds the HTTP clients of their own CA bundles.
	maxCABundles = 64
)

// Client speaks the distribution API to registries, through oras-go's
// remote.Repository, by git's HTTP rules (source/git: the transport, its
// bounded answers, the redirect policy that keeps credentials to one origin).
// It is safe for concurrent use. It keeps registries' tokens per registry,
// scope and credentials (one auth.Cache per Credentials.Key) until a registry
// refuses one, and one HTTP transport per CA bundle.
type Client struct {
	opts Options

	mu gosync.Mutex
	// caches are the token caches by Credentials.Key.
	caches map[string]auth.Cache
	// transports are the bounded transports by CA bundle ("" for the system's).
	transports map[string]*caTransport
}

// caTransport is the transport of one CA bundle.
type caTransport struct {
	bounded http.RoundTripper
	close   func()
}

// New returns a Client bounded by opts (zero fields take DefaultOptions').
func New(opts Options) (*Client, error) {
	c := &Client{opts: opts.withDefaults(), caches: map[string]auth.Cache{}, transports: map[string]*caTransport{}}
	if _, err := c.transport(nil); err != nil {
		return nil, err
	}
	return c, nil
}

// manifestMediaTypes are the manifests the Client asks for and follows: OCI's
// and Docker's v2 schema 2 image manifests and indexes (manifest lists).
var manifestMediaTypes = []string{
	mediaTypeOCIManifest, mediaTypeOCIIndex, mediaTypeDockerManifest, mediaTypeDockerList,
}

const (
	mediaTypeOCIManifest    = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeOCIIndex       = "application/vnd.oci.image.index.v1+json"
	mediaTypeDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	mediaTypeDockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"
)

// call is one call's repository, its HTTP guard and its context, bounded by
// Options.Timeout; done releases the context.
type call struct {
	repo  *remote.Repository
	guard *guard
	ctx   context.Context
	done  context.CancelFunc
}

// start prepares a call on repo with creds, reading metadata of at most
// maxMetadata bytes an answer.
func (c *Client) start(ctx context.Context, repo Repository, creds Credentials, maxMetadata int64) (*call, error) {
	if repo.Registry == "" || repo.Path == "" {
		return nil, &Error{Reason: v1alpha1.ReasonUnsupportedURL, Err: errors.New("an OCI repository names a registry and a path (oci://host/path)")}
	}
	tr, err := c.transport(creds.CAFile)
	if err != nil {
		return nil, &Error{Reason: v1alpha1.ReasonInvalidCredentials, Err: fmt.Errorf("the CA bundle of %s: %w", repo.Registry, err)}
	}
	g := &guard{next: tr.bounded, registry: repo.Registry}
	client := &auth.Client{
		Client:     &http.Client{Transport: g, CheckRedirect: git.CredentialsToOneOrigin},
		Header:     http.Header{"User-Agent": {"tether"}},
		Credential: auth.StaticCredential(repo.Registry, creds.credential()),
		Cache:      c.cache(creds.Key()),
	}
	ctx, done := context.WithTimeout(ctx, c.opts.Timeout)
	return &call{
		repo: &remote.Repository{
			Client:             client,
			Reference:          registry.Reference{Registry: repo.Registry, Repository: repo.Path},
			PlainHTTP:          repo.PlainHTTP,
			ManifestMediaTypes: manifestMediaTypes,
			MaxMetadataBytes:   maxMetadata,
			// The Client deletes nothing: a referrers index replaced under the
			// tag schema is left, as registries that refuse deletes need.
			SkipReferrersGC: true,
		},
		guard: g,
		ctx:   ctx,
		done:  done,
	}, nil
}

// cache is the token cache of the credentials key.
func (c *Client) cache(key string) auth.Cache {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cache, ok := c.caches[key]; ok {
		return cache
	}
	if len(c.caches) >= maxTokenCaches {
		clear(c.caches)
	}
	cache := auth.NewCache()
	c.caches[key] = cache
	return cache
}

// transport is the bounded transport trusting caBundle besides the system's
// roots.
func (c *Client) transport(caBundle []byte) (*caTransport, error) {
	key := ""
	if len(caBundle) > 0 {
		sum := sha256.Sum256(caBundle)
		key = string(sum[:])
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if tr, ok := c.transports[key]; ok {
		return tr, nil
	}
	tr, err := git.NewHTTPTransport(caBundle)
	if err != nil {
		return nil, err
	}
	if len(c.transports) >= maxCABundles {
		for k, old := range c.transports {
			if k != "" {
				old.close()
				delete(c.transports, k)
			}
		}
	}
	c.transports[key] = &caTransport{bounded: git.Bounded(tr), close: tr.CloseIdleConnections}
	return c.transports[key], nil
}

// guard is one call's view of the transport. It refuses plain HTTP to any
// host but loopback when a request carries credentials (a token realm on
// http:// would get the password in clear; oras-go asks whatever realm a
// challenge names), keeps a tag list's pages on the registry (oras-go follows
// any Link), and counts a tag list's pages and bytes against its bounds. A
// call is sequential: guard needs no lock.
type guard struct {
	next     http.RoundTripper
	registry string
	// tagBytes is what is left of the tag list's bound; tagPages the pages
	// read, of at most maxPages.
	tagBytes int64
	tagPages int
	maxPages int
	// overBytes is set when the tag list went past tagBytes.
	overBytes bool
	// tagsLeft is how many more tags the list may hold (Options.MaxTags less
	// those of the pages before): a page is refused as soon as it holds more
	// strings than that (countedBody), before oras-go decodes it whole.
	tagsLeft int
}

func (g *guard) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme == "http" && !isLoopback(r.URL.Host) && (r.Header.Get("Authorization") != "" || r.Method != http.MethodGet) {
		closeBody(r)
		return nil, errPlainHTTP
	}
	tagList := strings.HasSuffix(r.URL.Path, "/tags/list")
	if tagList && !strings.EqualFold(r.URL.Host, g.registry) {
		closeBody(r)
		return nil, errTagListElsewhere
	}
	if tagList && g.maxPages > 0 && g.tagPages >= g.maxPages {
		closeBody(r)
		return nil, errTooManyPages
	}
	resp, err := g.next.RoundTrip(r)
	if err != nil || !tagList || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	g.tagPages++
	resp.Body = &countedBody{ReadCloser: resp.Body, g: g}
	return resp, nil
}

func closeBody(r *http.Request) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
}

// errTooManyPages refuses a tag list's page past Options.MaxTagPages.
var errTooManyPages = errors.New("too many pages")

// errOverBytes ends the read of a tag list past its bound.
var errOverBytes = errors.New("over the bound")

// errTooManyTags ends the read of a tag list page that holds more strings
// than tags are left.
var errTooManyTags = errors.New("too many tags")

// tagPageStrings is how many strings a tag list page holds besides its tags
// (the keys "name" and "tags", the repository's name), with room to spare.
const tagPageStrings = 16

// countedBody is a tag list page's body, read within what is left of the
// guard's bound of bytes, and counting its JSON strings: oras-go decodes a
// page whole, and a page of millions of tags ("a",) would be millions of
// strings before the first of them is counted against MaxTags.
type countedBody struct {
	io.ReadCloser
	g *guard
	// quotes counts the unescaped quotes read; escaped is set after a
	// backslash within a string.
	quotes   int
	inString bool
	escaped  bool
}

func (b *countedBody) Read(p []byte) (int, error) {
	if b.g.overBytes {
		return 0, errOverBytes
	}
	if int64(len(p)) > b.g.tagBytes+1 {
		p = p[:b.g.tagBytes+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.g.tagBytes -= int64(n)
	if b.g.tagBytes < 0 {
		b.g.overBytes = true
		return 0, errOverBytes
	}
	b.count(p[:n])
	if b.quotes/2 > b.g.tagsLeft+tagPageStrings {
		return 0, errTooManyTags
	}
	return n, err
}

// count counts the quotes that open or close a JSON string in p.
func (b *countedBody) count(p []byte) {
	for _, c := range p {
		switch {
		case b.escaped:
			b.escaped = false
		case c == '\\' && b.inString:
			b.escaped = true
		case c == '"':
			b.quotes++
			b.inString = !b.inString
		}
	}
}
