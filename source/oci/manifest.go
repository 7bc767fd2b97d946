package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"tether.dev/tether/api/v1alpha1"
)

// Manifest is one image manifest read and checked.
type Manifest struct {
	// Descriptor is of the manifest itself (digest, size, media type); for an
	// index, of the manifest chosen in it.
	Descriptor ocispec.Descriptor
	// Raw is the manifest as read, its digest checked.
	Raw []byte
	// ArtifactType is the manifest's artifactType, else its config's media type.
	ArtifactType string
	Config       ocispec.Descriptor
	Layers       []ocispec.Descriptor
	Annotations  map[string]string
	Subject      *ocispec.Descriptor
}

// Manifest resolves reference (a tag, or a "sha256:…" digest) and reads its
// manifest, within Options.MaxManifestBytes, its digest checked. An image
// index is followed to the one manifest whose artifactType or config media
// type is in want (want empty: the index must hold exactly one manifest);
// none or several is an error naming what was wanted. A manifest that is not
// an index is returned whatever its type: the caller judges ArtifactType.
// Docker's v2 schema 2 manifest and manifest list media types are read like
// OCI's.
func (c *Client) Manifest(ctx context.Context, repo Repository, creds Credentials, reference string, want ...string) (Manifest, error) {
	what := "the manifest of " + repo.Path + referenceSuffix(reference)
	call, err := c.start(ctx, repo, creds, c.opts.MaxManifestBytes)
	if err != nil {
		return Manifest{}, err
	}
	defer call.done()
	if _, err := call.repo.ParseReference(reference); err != nil {
		return Manifest{}, &Error{Reason: v1alpha1.ReasonUnsupportedRef, Err: fmt.Errorf("%.100q is not a tag or a digest", reference)}
	}
	desc, rc, err := call.repo.FetchReference(call.ctx, reference)
	if err != nil {
		return Manifest{}, wrap(what, err)
	}
	raw, err := c.readManifest(what, desc, rc)
	if err != nil {
		return Manifest{}, err
	}
	switch desc.MediaType {
	case mediaTypeOCIIndex, mediaTypeDockerList:
		return c.followIndex(call, what, raw, want)
	}
	return decodeManifest(what, desc, raw)
}

// referenceSuffix is how a reference follows a repository's path: ":tag" or
// "@sha256:…".
func referenceSuffix(reference string) string {
	if strings.Contains(reference, ":") {
		return "@" + reference
	}
	return ":" + reference
}

// readManifest reads the manifest desc describes from rc, within
// MaxManifestBytes (refused before any byte is read when desc says more),
// its size and digest checked.
func (c *Client) readManifest(what string, desc ocispec.Descriptor, rc io.ReadCloser) ([]byte, error) {
	defer func() { _ = rc.Close() }()
	if desc.Size > c.opts.MaxManifestBytes {
		return nil, limitError("%s is %d bytes, over the limit of %d", what, desc.Size, c.opts.MaxManifestBytes)
	}
	raw, err := content.ReadAll(rc, desc)
	if err != nil {
		return nil, wrap(what, err)
	}
	return raw, nil
}

// decodeManifest reads raw, an image manifest of desc's media type.
func decodeManifest(what string, desc ocispec.Descriptor, raw []byte) (Manifest, error) {
	switch desc.MediaType {
	case mediaTypeOCIManifest, mediaTypeDockerManifest:
	default:
		return Manifest{}, registryError("%s is of media type %.100q, not an image manifest's", what, desc.MediaType)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return Manifest{}, registryError("%s is not the JSON of an image manifest", what)
	}
	if m.MediaType != "" && m.MediaType != desc.MediaType {
		return Manifest{}, registryError("%s says it is of media type %.100q, the registry %.100q", what, m.MediaType, desc.MediaType)
	}
	artifactType := m.ArtifactType
	if artifactType == "" {
		artifactType = m.Config.MediaType
	}
	return Manifest{Descriptor: desc, Raw: raw, ArtifactType: artifactType, Config: m.Config, Layers: m.Layers,
		Annotations: m.Annotations, Subject: m.Subject}, nil
}

// followIndex finds the one manifest of the index raw whose artifact type is
// in want (any, when want is empty), and reads it. An entry that says its
// artifactType is judged by it; the others are read (at most
// MaxIndexManifests of them) for their config's media type.
func (c *Client) followIndex(call *call, what string, raw []byte, want []string) (Manifest, error) {
	var index ocispec.Index
	if err := json.Unmarshal(raw, &index); err != nil {
		return Manifest{}, registryError("%s is not the JSON of an image index", what)
	}
	var found []Manifest
	read := 0
	for _, entry := range index.Manifests {
		if entry.MediaType != mediaTypeOCIManifest && entry.MediaType != mediaTypeDockerManifest {
			continue
		}
		if len(want) > 0 && entry.ArtifactType != "" && !slices.Contains(want, entry.ArtifactType) {
			continue
		}
		if read == c.opts.MaxIndexManifests {
			return Manifest{}, limitError("%s is an index of more than %d manifests to read, the limit", what, c.opts.MaxIndexManifests)
		}
		read++
		m, err := c.fetchManifest(call, what, entry)
		if err != nil {
			return Manifest{}, err
		}
		if len(want) == 0 || slices.Contains(want, m.ArtifactType) {
			found = append(found, m)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(want) == 0 && len(found) == 0:
		return Manifest{}, registryError("%s is an index holding no image manifest", what)
	case len(want) == 0:
		return Manifest{}, registryError("%s is an index of %d manifests; which one is meant cannot be told", what, len(found))
	case len(found) == 0:
		return Manifest{}, registryError("%s is an index holding no manifest of artifact type %s", what, strings.Join(want, " or "))
	}
	return Manifest{}, registryError("%s is an index holding %d manifests of artifact type %s; one is expected", what, len(found), strings.Join(want, " or "))
}

// fetchManifest reads the manifest entry of an index describes, by digest.
func (c *Client) fetchManifest(call *call, what string, entry ocispec.Descriptor) (Manifest, error) {
	if err := entry.Digest.Validate(); err != nil {
		return Manifest{}, registryError("%s: the index names a digest that is not one", what)
	}
	what += " (its manifest " + entry.Digest.String() + ")"
	if entry.Size > c.opts.MaxManifestBytes {
		return Manifest{}, limitError("%s is %d bytes, over the limit of %d", what, entry.Size, c.opts.MaxManifestBytes)
	}
	rc, err := call.repo.Manifests().Fetch(call.ctx, entry)
	if err != nil {
		return Manifest{}, wrap(what, err)
	}
	raw, err := c.readManifest(what, entry, rc)
	if err != nil {
		return Manifest{}, err
	}
	return decodeManifest(what, ocispec.Descriptor{MediaType: entry.MediaType, Digest: entry.Digest, Size: entry.Size}, raw)
}
