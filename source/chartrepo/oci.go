package chartrepo

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/cosign"
	"tether.dev/tether/source/oci"
	"tether.dev/tether/source/result"
)

// Media types of a chart pushed to an OCI registry, as Helm pushes it.
const (
	ociConfigType     = "application/vnd.cncf.helm.config.v1+json"
	ociChartLayerType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	// maxOCIManifestBytes bounds a manifest: the size the distribution spec asks
	// registries to accept at least, and the bound of its clients (oras, Helm).
	maxOCIManifestBytes = 4 << 20
)

// ociDigest is the form of a layer's digest that is followed: SHA-256.
var ociDigest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// isOCI reports whether repository names an OCI registry (oci://host/path).
func isOCI(repository string) bool {
	return strings.HasPrefix(repository, "oci://")
}

// newOCIClient is the registries' client of Repositories bounded by opts: a
// tag list within MaxChartIndexBytes and maxChartVersions, a call within
// Timeout.
func newOCIClient(opts Options) (*oci.Client, error) {
	return oci.New(oci.Options{MaxManifestBytes: maxOCIManifestBytes, MaxTags: maxChartVersions,
		MaxTagListBytes: opts.MaxChartIndexBytes, Timeout: opts.Timeout})
}

// ociRepository is where req's chart lives: the repository of
// spec.source.chart.repository (oci://host/path) with the chart's name
// appended, as Helm does (oci://host/charts + webapp is charts/webapp).
func ociRepository(req Request) (oci.Repository, error) {
	base, err := oci.ParseURL(req.Repository)
	if err != nil {
		return oci.Repository{}, fmt.Errorf("spec.source.chart.repository: %w", err)
	}
	repo, err := base.Join(req.Name)
	if err != nil {
		return oci.Repository{}, fmt.Errorf("spec.source.chart.repository and the chart's name: %w", err)
	}
	return repo, nil
}

// ociCredentials are auth as a registry takes them: a BearerToken is sent as
// the registry's access token.
func ociCredentials(auth Auth) oci.Credentials {
	return oci.Credentials{Username: auth.Username, Password: auth.Password, AccessToken: auth.BearerToken, CAFile: auth.CAFile}
}

// ociFailure is err, an *oci.Error, as a FetchError of req's chart. A
// registry's nonsense is ChartRepositoryFailed, as an index's is.
func ociFailure(req Request, err error) error {
	reason := v1alpha1.ReasonChartRepositoryFailed
	var oe *oci.Error
	if errors.As(err, &oe) && oe.Reason != v1alpha1.ReasonRegistryFailed {
		reason = oe.Reason
	}
	return &result.FetchError{URL: req.Repository, Ref: req.Label(), Reason: reason, Err: err}
}

// readTags lists the tags of req's chart in its registry (all pages, within
// Options.MaxChartIndexBytes in all and maxChartVersions tags) as an index of
// that one chart (tagEntries).
func (rs *Repositories) readTags(ctx context.Context, req Request) (chartIndex, error) {
	repo, err := ociRepository(req)
	if err != nil {
		return nil, &result.FetchError{URL: req.Repository, Ref: req.Label(), Reason: v1alpha1.ReasonUnsupportedURL, Err: err}
	}
	tags, err := rs.oci.Tags(ctx, repo, ociCredentials(req.Auth))
	if err != nil {
		return nil, ociFailure(req, err)
	}
	return chartIndex{req.Name: tagEntries(tags)}, nil
}

// tagEntries are a tag list's entries: each tag a version, "_" read as "+"
// (OCI tags cannot hold "+"; Helm pushes 1.0.0+a as 1.0.0_a). An entry's URL
// is its tag, until ociLayer resolves it.
func tagEntries(tags []string) []chartEntry {
	entries := make([]chartEntry, 0, len(tags))
	for _, tag := range tags {
		entries = append(entries, chartEntry{Version: strings.ReplaceAll(tag, "_", "+"), URLs: []string{tag}})
	}
	return entries
}

// ociLayer resolves the tag of entry (from readTags) to its chart's layer:
// the entry returned has the layer's descriptor and digest, which
// chartPackage downloads once per version and digest. A tag's manifest is
// read once per read of the tag list (the same MaxAge, the same credentials).
func (rs *Repositories) ociLayer(ctx context.Context, req Request, entry chartEntry) (chartEntry, error) {
	key, tag := chartIndexKey(req), entry.URLs[0]
	c := rs.charts
	c.mu.Lock()
	if e := c.indexes[key]; e != nil {
		if layer, ok := e.layers[tag]; ok {
			c.mu.Unlock()
			return layer, nil
		}
	}
	c.mu.Unlock()
	layer, err := rs.readManifest(ctx, req, entry)
	if err != nil {
		return chartEntry{}, err
	}
	c.mu.Lock()
	if e := c.indexes[key]; e != nil {
		if e.layers == nil {
			e.layers = map[string]chartEntry{}
		}
		e.layers[tag] = layer
	}
	c.mu.Unlock()
	return layer, nil
}

// readManifest reads the manifest of entry's tag (an image index followed to
// the manifest of Helm's config media type) and finds its one chart layer, of
// Helm's media type, of a size within Options.MaxChartPackageBytes and a
// SHA-256 digest.
func (rs *Repositories) readManifest(ctx context.Context, req Request, entry chartEntry) (chartEntry, error) {
	repo, err := ociRepository(req)
	if err != nil {
		return chartEntry{}, &result.FetchError{URL: req.Repository, Ref: req.Label(), Reason: v1alpha1.ReasonUnsupportedURL, Err: err}
	}
	fail := func(reason string, err error) (chartEntry, error) {
		return chartEntry{}, &result.FetchError{URL: req.Repository, Ref: req.Label(), Reason: reason,
			Err: fmt.Errorf("the manifest of chart %s@%s: %w", req.Name, entry.Version, err)}
	}
	m, err := rs.oci.Manifest(ctx, repo, ociCredentials(req.Auth), entry.URLs[0], ociConfigType)
	if err != nil {
		return chartEntry{}, ociFailure(req, err)
	}
	layer, err := chartLayer(m.Layers)
	if err != nil {
		return fail(v1alpha1.ReasonChartRepositoryFailed, err)
	}
	if layer.Size > rs.opts.MaxChartPackageBytes {
		return fail(v1alpha1.ReasonRenderLimitExceeded, fmt.Errorf("the chart's layer is %d bytes, over the limit of %d", layer.Size, rs.opts.MaxChartPackageBytes))
	}
	return chartEntry{Version: entry.Version, URLs: entry.URLs, Digest: layer.Digest.String(), Layer: &layer, Manifest: &m.Descriptor}, nil
}

// verifyChart checks that one of req's keys signed entry's manifest with
// cosign (read through the registry, source/cosign), and names the signer.
// An acceptance is remembered per manifest digest and keys; a refusal is
// asked again at the next fetch (a signature may be pushed after its chart).
func (rs *Repositories) verifyChart(ctx context.Context, req Request, entry chartEntry) (string, error) {
	fail := func(reason string, err error) (string, error) {
		return "", &result.FetchError{URL: req.Repository, Ref: req.Label(), Reason: reason, Err: err}
	}
	if !isOCI(req.Repository) || entry.Manifest == nil {
		return fail(v1alpha1.ReasonRevisionNotVerified, fmt.Errorf("chart %s@%s: only charts in OCI registries carry cosign signatures", req.Name, entry.Version))
	}
	repo, err := ociRepository(req)
	if err != nil {
		return fail(v1alpha1.ReasonUnsupportedURL, err)
	}
	key := entry.Manifest.Digest.String() + "\x00" + req.Keys.Digest()
	if signer, ok := rs.charts.verdict(key); ok {
		return signer, nil
	}
	signer, err := cosign.Verify(ctx, rs.oci.Reader(repo, ociCredentials(req.Auth)), req.Keys, repo.Registry+"/"+repo.Path, *entry.Manifest)
	switch {
	case cosign.ReasonOf(err) != "":
		return fail(v1alpha1.ReasonRevisionNotVerified, fmt.Errorf("chart %s@%s: %w", req.Name, entry.Version, err))
	case err != nil:
		return "", ociFailure(req, fmt.Errorf("reading the signatures of chart %s@%s: %w", req.Name, entry.Version, err))
	}
	rs.charts.keepVerdict(key, signer.String())
	return signer.String(), nil
}

// chartLayer is the one layer of Helm's chart media type among layers.
func chartLayer(layers []ocispec.Descriptor) (ocispec.Descriptor, error) {
	var found []ocispec.Descriptor
	var others []string
	for _, l := range layers {
		if l.MediaType == ociChartLayerType {
			found = append(found, l)
		} else if len(others) < 3 {
			others = append(others, fmt.Sprintf("%.100q", l.MediaType))
		}
	}
	switch {
	case len(found) == 0 && len(others) == 0:
		return ocispec.Descriptor{}, errors.New("it has no layer; a chart is one layer of media type " + ociChartLayerType)
	case len(found) == 0:
		return ocispec.Descriptor{}, fmt.Errorf("no layer is of media type %s (it has %s); is it a chart pushed by helm?", ociChartLayerType, strings.Join(others, ", "))
	case len(found) > 1:
		return ocispec.Descriptor{}, fmt.Errorf("it has %d layers of media type %s; a chart has one", len(found), ociChartLayerType)
	}
	if !ociDigest.MatchString(found[0].Digest.String()) {
		return ocispec.Descriptor{}, fmt.Errorf("the chart's layer has the digest %.100q; a sha256: digest is expected", found[0].Digest)
	}
	return found[0], nil
}

// downloadLayer downloads entry's chart layer (ociLayer's) within
// Options.MaxChartPackageBytes, its size and digest checked by the client.
func (rs *Repositories) downloadLayer(ctx context.Context, req Request, entry chartEntry) ([]byte, error) {
	repo, err := ociRepository(req)
	if err != nil {
		return nil, &result.FetchError{URL: req.Repository, Ref: req.Label(), Reason: v1alpha1.ReasonUnsupportedURL, Err: err}
	}
	if entry.Layer == nil {
		return nil, &result.FetchError{URL: req.Repository, Ref: req.Label(), Reason: v1alpha1.ReasonChartRepositoryFailed,
			Err: fmt.Errorf("chart %s@%s: its tag was not resolved to a layer", req.Name, entry.Version)}
	}
	data, err := rs.oci.Blob(ctx, repo, ociCredentials(req.Auth), *entry.Layer, rs.opts.MaxChartPackageBytes)
	if err != nil {
		return nil, ociFailure(req, err)
	}
	return data, nil
}
