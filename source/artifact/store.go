package artifact

import (
	"context"
	"errors"
	"fmt"
	"strings"
	gosync "sync"
	"time"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/cosign"
	"tether.dev/tether/source/oci"
	"tether.dev/tether/source/result"
)

// Media types of Flux's artifact format, as flux push artifact writes it.
const (
	FluxConfigType  = "application/vnd.cncf.flux.config.v1+json"
	FluxContentType = "application/vnd.cncf.flux.content.v1.tar+gzip"
)

// Annotations a pushed artifact carries (the OCI image spec's), which status
// and `tether get` show of it.
const (
	AnnotationSource   = "org.opencontainers.image.source"
	AnnotationRevision = "org.opencontainers.image.revision"
	AnnotationCreated  = "org.opencontainers.image.created"
)

// Options bound what artifacts may cost.
type Options struct {
	// Dir holds the unpacked artifacts, one directory per layer digest.
	// Required.
	Dir string
	// MaxLayerBytes bounds a content layer as downloaded.
	MaxLayerBytes int64
	// MaxFileSize, MaxTreeSize and MaxTreeEntries bound what one layer
	// unpacks to: a file, all files, and entries.
	MaxFileSize    int64
	MaxTreeSize    int64
	MaxTreeEntries int
	// MaxDiskBytes bounds the unpacked artifacts kept on disk; past it, the
	// least recently used are removed.
	MaxDiskBytes int64
	// OCI bounds the registry conversations.
	OCI oci.Options
}

// Request names the artifact a Sync follows: spec.source.oci with its Secrets
// read.
type Request struct {
	// URL is oci://host/path.
	URL string
	Ref v1alpha1.OCIRef
	// MaxAge lets Fetch answer from a tag list or a tag's resolution of the
	// same repository and credentials made at most this long ago, by any
	// caller: Syncs of one repository share one listing per interval. Zero
	// always asks.
	MaxAge time.Duration
	// Credentials for the registry.
	Credentials oci.Credentials
	// Keys, when set, are the cosign public keys one of which must have
	// signed the artifact.
	Keys *cosign.Keys
}

// Label names what req follows in messages: its tag, range or digest.
func (r Request) Label() string {
	if s := r.Ref.String(); s != "" {
		return s
	}
	if r.Ref.Digest != "" {
		return r.Ref.Digest
	}
	return "latest"
}

// Store fetches artifacts and keeps them unpacked. It is safe for concurrent
// use.
type Store struct {
	opts   Options
	client *oci.Client
	disk   *disk

	mu gosync.Mutex
	// answers are tag lists and resolutions by repository, credentials and
	// what was asked, with when they were made (MaxAge).
	answers map[string]answer
	// verdicts are the signers of manifests verified, by repository, manifest
	// digest and keys: a manifest's content never changes.
	verdicts map[string]string
}

// answer is a registry's answer kept for MaxAge: a tag list or a manifest.
type answer struct {
	at       time.Time
	tags     []string
	manifest oci.Manifest
}

// maxAnswers bounds the answers and verdicts kept; past it they are forgotten
// all at once (each costs one request to learn again).
const maxAnswers = 4096

// New returns a Store unpacking under opts.Dir; what an earlier agent left
// there is kept, and counted against MaxDiskBytes.
func New(opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("artifact: a directory is required")
	}
	client, err := oci.New(opts.OCI)
	if err != nil {
		return nil, err
	}
	d, err := openDisk(opts.Dir, opts.MaxDiskBytes)
	if err != nil {
		return nil, err
	}
	return &Store{opts: opts, client: client, disk: d, answers: map[string]answer{}, verdicts: map[string]string{}}, nil
}

// Client is the Store's registry client, for callers that push (`tether push
// artifact`) or read charts through the same bounds.
func (s *Store) Client() *oci.Client { return s.client }

// Fetch resolves req to one artifact, checks its signature when req has Keys,
// and unpacks its content layer (once per digest, for every caller). The
// Revision names the repository (URL), the tag followed (Ref; empty for a
// digest), the manifest's digest (Artifact) and the layer's (Layer), and who
// signed it (Signer). Failures are result.FetchErrors naming the repository
// and the tag: RepositoryNotFound, NoMatchingTag, AuthenticationFailed,
// RevisionNotVerified, …, or RenderErrors for a layer over its bounds.
func (s *Store) Fetch(ctx context.Context, req Request) (result.Revision, error) {
	fail := func(reason string, err error) (result.Revision, error) {
		return result.Revision{}, &result.FetchError{URL: req.URL, Ref: req.Label(), Reason: reason, Err: err}
	}
	repo, err := oci.ParseURL(req.URL)
	if err != nil {
		return fail(v1alpha1.ReasonUnsupportedURL, err)
	}
	reference, tag := req.Ref.Digest, req.Ref.Tag
	switch {
	case req.Ref.Digest != "":
	case req.Ref.SemVer != "":
		constraint, err := semver.NewConstraint(req.Ref.SemVer)
		if err != nil {
			return fail(v1alpha1.ReasonInvalidSemVer, fmt.Errorf("semver range %.200q: %w", req.Ref.SemVer, err))
		}
		tags, err := s.tags(ctx, repo, req)
		if err != nil {
			return fail(reasonOf(err), err)
		}
		var ok bool
		if tag, ok = newestTag(tags, constraint); !ok {
			return fail(v1alpha1.ReasonNoMatchingTag, fmt.Errorf("no tag of %s satisfies %.200q (%d tags)", repo.Path, req.Ref.SemVer, len(tags)))
		}
		reference = tag
	default:
		if tag == "" {
			tag = "latest"
		}
		reference = tag
	}
	m, err := s.manifest(ctx, repo, req, reference)
	if err != nil {
		return fail(reasonOf(err), err)
	}
	if !sha256Digest.MatchString(m.Descriptor.Digest.String()) {
		return fail(v1alpha1.ReasonRegistryFailed, fmt.Errorf("the manifest of %s has the digest %.100q; a sha256: digest is expected", reference, m.Descriptor.Digest))
	}
	rev := result.Revision{URL: req.URL, Ref: tag, Artifact: hexOf(m.Descriptor.Digest.String())}
	if req.Keys != nil {
		if rev.Signer, err = s.verify(ctx, repo, req, m); cosign.ReasonOf(err) != "" {
			// The message names the artifact's digest and why.
			return fail(v1alpha1.ReasonRevisionNotVerified, err)
		} else if err != nil {
			return fail(reasonOf(err), fmt.Errorf("reading the signatures of artifact %s: %w", m.Descriptor.Digest, err))
		}
	}
	layer, err := contentLayer(m)
	if err != nil {
		return fail(v1alpha1.ReasonRegistryFailed, fmt.Errorf("artifact %s: %w", m.Descriptor.Digest, err))
	}
	if layer.Size > s.opts.MaxLayerBytes {
		return fail(v1alpha1.ReasonRenderLimitExceeded, fmt.Errorf("artifact %s: its layer is %d bytes, over the limit of %d", m.Descriptor.Digest, layer.Size, s.opts.MaxLayerBytes))
	}
	rev.Layer = hexOf(layer.Digest.String())
	if err := s.unpack(ctx, repo, req, layer); err != nil {
		var re *result.RenderError
		if errors.As(err, &re) {
			return result.Revision{}, err
		}
		return fail(reasonOf(err), err)
	}
	return rev, nil
}

// Root is the directory rev's layer is unpacked in, marked as used; a
// FetchError (CacheUnreadable) when it is no longer on disk (Fetch unpacks it
// again).
func (s *Store) Root(rev result.Revision) (string, error) {
	dir, ok := s.disk.use(rev.Layer)
	if !ok {
		return "", &result.FetchError{URL: rev.URL, Ref: rev.Ref, Reason: v1alpha1.ReasonCacheUnreadable,
			Err: errors.New("the artifact is no longer in the agent's cache; it is downloaded again at the next fetch")}
	}
	return dir, nil
}

// Forget drops what was learnt of url's tags: the next Fetch asks the registry.
func (s *Store) Forget(url string) {
	prefix := url + "\x00"
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.answers {
		if strings.HasPrefix(k, prefix) {
			delete(s.answers, k)
		}
	}
}

// tags lists repo's tags, or answers from a list made within req.MaxAge with
// the same credentials.
func (s *Store) tags(ctx context.Context, repo oci.Repository, req Request) ([]string, error) {
	key := req.URL + "\x00" + req.Credentials.Key() + "\x00tags"
	if a, ok := s.recent(key, req.MaxAge); ok {
		return a.tags, nil
	}
	tags, err := s.client.Tags(ctx, repo, req.Credentials)
	if err != nil {
		return nil, err
	}
	s.keep(key, answer{at: time.Now(), tags: tags})
	return tags, nil
}

// manifest reads the manifest reference names: a digest's once (its content
// never changes), a tag's once per req.MaxAge.
func (s *Store) manifest(ctx context.Context, repo oci.Repository, req Request, reference string) (oci.Manifest, error) {
	key := req.URL + "\x00" + req.Credentials.Key() + "\x00manifest:" + reference
	age := req.MaxAge
	if strings.HasPrefix(reference, "sha256:") {
		age = time.Duration(1<<63 - 1)
	}
	if a, ok := s.recent(key, age); ok {
		return a.manifest, nil
	}
	m, err := s.client.Manifest(ctx, repo, req.Credentials, reference, FluxConfigType)
	if err != nil {
		return oci.Manifest{}, err
	}
	s.keep(key, answer{at: time.Now(), manifest: m})
	return m, nil
}

func (s *Store) recent(key string, age time.Duration) (answer, bool) {
	if age <= 0 {
		return answer{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.answers[key]
	if !ok || time.Since(a.at) > age {
		return answer{}, false
	}
	return a, true
}

func (s *Store) keep(key string, a answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.answers) >= maxAnswers {
		clear(s.answers)
	}
	s.answers[key] = a
}

// verify checks m's cosign signature with req's keys, once per manifest and
// keys: a refusal is asked again at every fetch (a signature may be pushed
// after its artifact), an acceptance is remembered.
func (s *Store) verify(ctx context.Context, repo oci.Repository, req Request, m oci.Manifest) (string, error) {
	key := req.URL + "\x00" + m.Descriptor.Digest.String() + "\x00" + req.Keys.Digest()
	s.mu.Lock()
	signer, ok := s.verdicts[key]
	s.mu.Unlock()
	if ok {
		return signer, nil
	}
	who, err := cosign.Verify(ctx, s.client.Reader(repo, req.Credentials), req.Keys, repo.Registry+"/"+repo.Path, m.Descriptor)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.verdicts) >= maxAnswers {
		clear(s.verdicts)
	}
	s.verdicts[key] = who.String()
	return who.String(), nil
}

// contentLayer is the layer of m to unpack: its one layer of Flux's content
// type, else its only layer.
func contentLayer(m oci.Manifest) (ocispec.Descriptor, error) {
	var flux []ocispec.Descriptor
	for _, l := range m.Layers {
		if l.MediaType == FluxContentType {
			flux = append(flux, l)
		}
	}
	switch {
	case len(flux) == 1:
		return flux[0], nil
	case len(flux) > 1:
		return ocispec.Descriptor{}, fmt.Errorf("it has %d layers of media type %s; an artifact has one", len(flux), FluxContentType)
	case len(m.Layers) == 1:
		return m.Layers[0], nil
	case len(m.Layers) == 0:
		return ocispec.Descriptor{}, errors.New("it has no layer; an artifact is one layer, a tarball of its files")
	}
	return ocispec.Descriptor{}, fmt.Errorf("it has %d layers and none of media type %s; is it an image rather than an artifact (flux push artifact, tether push artifact)?", len(m.Layers), FluxContentType)
}

// newestTag is the tag of the highest version satisfying constraint; tags
// that are no versions are ignored, a leading "v" allowed; of two tags of one
// version the one sorting first.
func newestTag(tags []string, constraint *semver.Constraints) (string, bool) {
	var best *semver.Version
	var bestTag string
	for _, tag := range tags {
		v, err := semver.NewVersion(strings.ReplaceAll(tag, "_", "+"))
		if err != nil || !constraint.Check(v) {
			continue
		}
		if best == nil || v.GreaterThan(best) || (v.Equal(best) && tag < bestTag) {
			best, bestTag = v, tag
		}
	}
	return bestTag, best != nil
}

// reasonOf is the reason of a registry's failure, RegistryFailed for one
// not classed.
func reasonOf(err error) string {
	var oe *oci.Error
	if errors.As(err, &oe) && oe.Reason != "" {
		return oe.Reason
	}
	var fe *result.FetchError
	if errors.As(err, &fe) {
		return fe.Reason
	}
	return v1alpha1.ReasonRegistryFailed
}

// hexOf is the hex part of a sha256:<hex> digest.
func hexOf(digest string) string { return strings.TrimPrefix(digest, "sha256:") }
