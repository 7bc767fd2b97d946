package chartrepo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/result"
)

// Media types of a chart pushed to an OCI registry, as Helm pushes it.
const (
	ociManifestType   = "application/vnd.oci.image.manifest.v1+json"
	ociChartLayerType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	// maxOCIManifestBytes bounds a manifest: the size the distribution spec asks
	// registries to accept at least, and the bound of its clients (oras, Helm).
	maxOCIManifestBytes = 4 << 20
	// maxOCITagPages bounds the pages of one tag list (the bytes of all of them
	// are bounded by Options.MaxChartIndexBytes too).
	maxOCITagPages = 100
)

// ociRepoPath is a repository path of the distribution spec: lower-case
// components separated by "/".
var ociRepoPath = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)

// ociDigest is the form of a layer's digest that is followed: SHA-256.
var ociDigest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// isOCI reports whether repository names an OCI registry (oci://host/path).
func isOCI(repository string) bool {
	return strings.HasPrefix(repository, "oci://")
}

// ociRef is where a chart lives in a registry: the registry's base URL
// ("https://host:port") and the repository's path, the chart's name appended
// to the path of spec.source.chart.repository as Helm does
// (oci://host/charts + webapp is the repository charts/webapp).
type ociRef struct {
	base, repo string
}

// parseOCIRef reads repository (oci://host/path) and the chart's name. A
// registry on a loopback address is spoken to over plain HTTP (as Docker
// treats 127.0.0.0/8 by default); any other over HTTPS.
func parseOCIRef(repository, name string) (ociRef, error) {
	u, err := url.Parse(repository)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return ociRef{}, errors.New("spec.source.chart.repository: an OCI registry is oci://host/path, with no user, query or fragment")
	}
	repo := strings.Trim(u.Path, "/")
	if repo != "" {
		repo += "/"
	}
	repo += name
	if !ociRepoPath.MatchString(repo) {
		return ociRef{}, fmt.Errorf("spec.source.chart.repository: %.200q (its path and the chart's name) is not a repository path of an OCI registry (lower-case letters, digits, separators)", repo)
	}
	scheme := "https"
	if isLoopbackHost(u.Hostname()) {
		scheme = "http"
	}
	return ociRef{base: scheme + "://" + u.Host, repo: repo}, nil
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// readTags lists the tags of req's chart in its registry (all pages, within
// Options.MaxChartIndexBytes in all) as an index of that one chart: each tag
// a version, "_" read as "+" (OCI tags cannot hold "+"; Helm pushes 1.0.0+a
// as 1.0.0_a). The entry's URL is the tag, until ociLayer resolves it.
func (rs *Repositories) readTags(ctx context.Context, req Request) (chartIndex, error) {
	fail := func(reason string, err error) (chartIndex, error) {
		return nil, &result.FetchError{URL: req.Repository, Ref: req.Label(), Reason: reason, Err: err}
	}
	ref, err := parseOCIRef(req.Repository, req.Name)
	if err != nil {
		return fail(v1alpha1.ReasonUnsupportedURL, err)
	}
	next := ref.base + "/v2/" + ref.repo + "/tags/list"
	budget := rs.opts.MaxChartIndexBytes
	var entries []chartEntry
	for page := 0; next != ""; page++ {
		if page == maxOCITagPages {
			return fail(v1alpha1.ReasonRenderLimitExceeded, fmt.Errorf("the tag list of %s is over %d pages, the limit", ref.repo, maxOCITagPages))
		}
		data, header, err := rs.downloadAs(ctx, next, "application/json", req, budget, "the tag list of "+ref.repo)
		var fe *result.FetchError
		if page > 0 && errors.As(err, &fe) && fe.Reason == v1alpha1.ReasonRenderLimitExceeded {
			return fail(fe.Reason, fmt.Errorf("the tag list of %s is over the limit of %d bytes in its %d pages", ref.repo, rs.opts.MaxChartIndexBytes, page+1))
		}
		if err != nil {
			return nil, err
		}
		budget -= int64(len(data))
		if entries, err = appendTags(entries, data); err != nil {
			var over *result.OverBudget
			if errors.As(err, &over) {
				return fail(v1alpha1.ReasonRenderLimitExceeded, fmt.Errorf("the tag list of %s: %w", ref.repo, err))
			}
			return fail(v1alpha1.ReasonChartRepositoryFailed, fmt.Errorf("the tag list of %s is not the JSON of the distribution spec", ref.repo))
		}
		if next, err = nextTagPage(next, header.Get("Link")); err != nil {
			return fail(v1alpha1.ReasonChartRepositoryFailed, err)
		}
	}
	return chartIndex{req.Name: entries}, nil
}

// appendTags appends the tags of a page of a tag list to entries, decoded as
// a stream, within maxChartVersions in all: a page of millions of empty tags
// is refused at the bound, never held whole.
func appendTags(entries []chartEntry, page []byte) ([]chartEntry, error) {
	dec := json.NewDecoder(bytes.NewReader(page))
	err := indexObject(dec, func(key string) error {
		if key != "tags" {
			return skipIndexValue(dec)
		}
		return indexArray(dec, func() error {
			var tag string
			if err := dec.Decode(&tag); err != nil {
				return err
			}
			if len(entries) == maxChartVersions {
				return errTooManyVersions("it")
			}
			entries = append(entries, chartEntry{Version: strings.ReplaceAll(tag, "_", "+"), URLs: []string{tag}})
			return nil
		})
	})
	return entries, err
}

// nextTagPage is the URL of the tag list's next page from a Link header
// (`</v2/x/tags/list?last=b&n=100>; rel="next"`), on the registry's own
// scheme and host; "" when there is none.
func nextTagPage(current, link string) (string, error) {
	if link == "" {
		return "", nil
	}
	target, params, _ := strings.Cut(link, ";")
	if !strings.Contains(params, `rel="next"`) && !strings.Contains(params, "rel=next") {
		return "", nil
	}
	target = strings.TrimSpace(target)
	if !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
		return "", errors.New("the tag list's Link header is not a link")
	}
	base, err := url.Parse(current)
	if err != nil {
		return "", err
	}
	rel, err := url.Parse(target[1 : len(target)-1])
	if err != nil {
		return "", errors.New("the tag list's next page cannot be parsed")
	}
	u := base.ResolveReference(rel)
	if u.Scheme != base.Scheme || u.Host != base.Host {
		return "", errors.New("the tag list's next page is on another host")
	}
	return u.String(), nil
}

// ociManifest is what is read of an image manifest.
type ociManifest struct {
	MediaType string          `json:"mediaType"`
	Layers    []ociDescriptor `json:"layers"`
}

type ociDescriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

// ociLayer resolves the tag of entry (from readTags) to its chart's layer:
// the entry returned has the blob's URL and digest, which chartPackage
// downloads once per version and digest. A tag's manifest is read once per
// read of the tag list (the same MaxAge, the same credentials).
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

// readManifest reads the manifest of entry's tag within maxOCIManifestBytes
// and finds its one chart layer, of Helm's media type, of a size within
// Options.MaxChartPackageBytes and a SHA-256 digest.
func (rs *Repositories) readManifest(ctx context.Context, req Request, entry chartEntry) (chartEntry, error) {
	ref, err := parseOCIRef(req.Repository, req.Name)
	if err != nil {
		return chartEntry{}, &result.FetchError{URL: req.Repository, Ref: req.Label(), Reason: v1alpha1.ReasonUnsupportedURL, Err: err}
	}
	what := "the manifest of chart " + req.Name + "@" + entry.Version
	fail := func(reason string, err error) (chartEntry, error) {
		return chartEntry{}, &result.FetchError{URL: req.Repository, Ref: req.Label(), Reason: reason, Err: fmt.Errorf("%s: %w", what, err)}
	}
	data, _, err := rs.downloadAs(ctx, ref.base+"/v2/"+ref.repo+"/manifests/"+url.PathEscape(entry.URLs[0]), ociManifestType, req, maxOCIManifestBytes, what)
	if err != nil {
		return chartEntry{}, err
	}
	var m ociManifest
	if err := json.Unmarshal(data, &m); err != nil {
		return fail(v1alpha1.ReasonChartRepositoryFailed, errors.New("not the JSON of an OCI image manifest"))
	}
	if m.MediaType != "" && m.MediaType != ociManifestType {
		return fail(v1alpha1.ReasonChartRepositoryFailed, fmt.Errorf("its media type is %.100q, not %s", m.MediaType, ociManifestType))
	}
	layer, err := chartLayer(m.Layers)
	if err != nil {
		return fail(v1alpha1.ReasonChartRepositoryFailed, err)
	}
	if layer.Size > rs.opts.MaxChartPackageBytes {
		return fail(v1alpha1.ReasonRenderLimitExceeded, fmt.Errorf("the chart's layer is %d bytes, over the limit of %d", layer.Size, rs.opts.MaxChartPackageBytes))
	}
	blob := ref.base + "/v2/" + ref.repo + "/blobs/" + layer.Digest
	return chartEntry{Version: entry.Version, URLs: []string{blob}, Digest: layer.Digest}, nil
}

// chartLayer is the one layer of Helm's chart media type among layers.
func chartLayer(layers []ociDescriptor) (ociDescriptor, error) {
	var found []ociDescriptor
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
		return ociDescriptor{}, errors.New("it has no layer; a chart is one layer of media type " + ociChartLayerType)
	case len(found) == 0:
		return ociDescriptor{}, fmt.Errorf("no layer is of media type %s (it has %s); is it a chart pushed by helm?", ociChartLayerType, strings.Join(others, ", "))
	case len(found) > 1:
		return ociDescriptor{}, fmt.Errorf("it has %d layers of media type %s; a chart has one", len(found), ociChartLayerType)
	}
	if !ociDigest.MatchString(found[0].Digest) {
		return ociDescriptor{}, fmt.Errorf("the chart's layer has the digest %.100q; a sha256: digest is expected", found[0].Digest)
	}
	return found[0], nil
}
