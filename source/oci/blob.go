package oci

import (
	"context"
	"fmt"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
)

// Blob reads desc's blob within limit bytes: a desc.Size over limit is
// refused before any byte is read, and the blob's size and digest are checked
// as it is read (content.ReadAll), so that what is returned is what desc
// names or nothing.
func (c *Client) Blob(ctx context.Context, repo Repository, creds Credentials, desc ocispec.Descriptor, limit int64) ([]byte, error) {
	if err := desc.Digest.Validate(); err != nil {
		return nil, registryError("the blob of %s: its descriptor names a digest that is not one", repo.Path)
	}
	what := fmt.Sprintf("the blob %s of %s", desc.Digest, repo.Path)
	switch {
	case desc.Size < 0:
		return nil, registryError("%s: its descriptor says it has %d bytes", what, desc.Size)
	case desc.Size > limit:
		return nil, limitError("%s is %d bytes, over the limit of %d", what, desc.Size, limit)
	}
	call, err := c.start(ctx, repo, creds, 0)
	if err != nil {
		return nil, err
	}
	defer call.done()
	rc, err := call.repo.Blobs().Fetch(call.ctx, desc)
	if err != nil {
		return nil, wrap(what, err)
	}
	defer func() { _ = rc.Close() }()
	data, err := content.ReadAll(rc, desc)
	if err != nil {
		return nil, wrap(what, err)
	}
	return data, nil
}
