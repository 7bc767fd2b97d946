package oci

import (
	"bytes"
	"context"
	"fmt"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"tether.dev/tether/api/v1alpha1"
)

// PushBlob pushes data, of mediaType, to repo (for `tether push artifact` and
// tests) and returns its descriptor.
func (c *Client) PushBlob(ctx context.Context, repo Repository, creds Credentials, mediaType string, data []byte) (ocispec.Descriptor, error) {
	desc := content.NewDescriptorFromBytes(mediaType, data)
	call, err := c.start(ctx, repo, creds, 0)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	defer call.done()
	if err := call.repo.Blobs().Push(call.ctx, desc, bytes.NewReader(data)); err != nil {
		return ocispec.Descriptor{}, wrapAs("pushing", "the blob "+desc.Digest.String()+" to "+repo.Path, err)
	}
	return desc, nil
}

// PushManifest pushes manifest, of mediaType, to repo, tagged with each of
// tags (none: by its digest only), and returns its descriptor. A manifest
// with a subject is also indexed under the referrers tag schema on a
// registry without the referrers API, as oras-go does.
func (c *Client) PushManifest(ctx context.Context, repo Repository, creds Credentials, mediaType string, manifest []byte, tags ...string) (ocispec.Descriptor, error) {
	desc := content.NewDescriptorFromBytes(mediaType, manifest)
	if desc.Size > c.opts.MaxManifestBytes {
		return ocispec.Descriptor{}, limitError("the manifest for %s is %d bytes, over the limit of %d", repo.Path, desc.Size, c.opts.MaxManifestBytes)
	}
	call, err := c.start(ctx, repo, creds, c.opts.MaxManifestBytes)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	defer call.done()
	if len(tags) == 0 {
		if err := call.repo.Manifests().Push(call.ctx, desc, bytes.NewReader(manifest)); err != nil {
			return ocispec.Descriptor{}, wrapAs("pushing", "the manifest "+desc.Digest.String()+" to "+repo.Path, err)
		}
		return desc, nil
	}
	for _, tag := range tags {
		if _, err := call.repo.ParseReference(tag); err != nil {
			return ocispec.Descriptor{}, &Error{Reason: v1alpha1.ReasonUnsupportedRef, Err: fmt.Errorf("%.100q is not a tag", tag)}
		}
		if err := call.repo.PushReference(call.ctx, desc, bytes.NewReader(manifest), tag); err != nil {
			return ocispec.Descriptor{}, wrapAs("pushing", "the manifest "+repo.Path+":"+tag, err)
		}
	}
	return desc, nil
}
